import { z } from 'zod';
import { jsonObject, microsToIso, queryBool, timestamp, uuid, type ValidationErrorItem } from './common.schema';

/** The run id stored for project-level feedback (run_id null): the sorting key has no nullable column. */
export const NO_RUN_ID = '00000000-0000-0000-0000-000000000000';

export const FEEDBACK_CONFIG_TYPES = ['continuous', 'categorical', 'freeform'] as const;

export const feedbackCategorySchema = z.object({ value: z.number(), label: z.string().nullish() });

export const feedbackConfigSchema = z.object({
  type: z.enum(FEEDBACK_CONFIG_TYPES),
  min: z.number().nullish(),
  max: z.number().nullish(),
  categories: z.array(feedbackCategorySchema).nullish(),
});
export type FeedbackConfig = z.infer<typeof feedbackConfigSchema>;

export const feedbackSourceSchema = z.object({ type: z.string().min(1), metadata: jsonObject.nullish() }).catchall(z.unknown());
export type FeedbackSource = z.infer<typeof feedbackSourceSchema>;

/** Scores are numbers; the SDK also sends booleans, stored as 1 and 0. */
const score = z.union([z.number(), z.boolean()]).transform((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v));
/** The spec types value as a string; the SDK also sends numbers, booleans and objects, kept as JSON. */
const feedbackValue = z.union([z.string(), z.number(), z.boolean(), jsonObject]);
const correction = z.union([jsonObject, z.string()]);
const key = z.string().min(1).max(180);

/** The fields a config constrains, checked after parsing (also after a PATCH merges them). */
export function feedbackConfigProblems(
  f: { score?: number | null; value?: unknown; feedback_config?: FeedbackConfig | null },
  root: (string | number)[] = [],
): ValidationErrorItem[] {
  const c = f.feedback_config;
  if (!c) return [];
  const out: ValidationErrorItem[] = [];
  const at = (field: string) => [...root, field];
  if (c.min != null && c.max != null && c.min > c.max) {
    out.push({ loc: at('feedback_config'), msg: `feedback_config.min (${c.min}) is greater than feedback_config.max (${c.max})`, type: 'value_error' });
    return out;
  }
  if (c.type === 'continuous') {
    if (f.score != null && c.min != null && f.score < c.min) {
      out.push({ loc: at('score'), msg: `score ${f.score} is below the feedback_config minimum ${c.min}`, type: 'less_than_min' });
    }
    if (f.score != null && c.max != null && f.score > c.max) {
      out.push({ loc: at('score'), msg: `score ${f.score} is above the feedback_config maximum ${c.max}`, type: 'greater_than_max' });
    }
  } else if (c.type === 'categorical') {
    const cats = c.categories ?? [];
    if (cats.length === 0) {
      out.push({ loc: at('feedback_config'), msg: 'categorical feedback_config needs at least one category', type: 'value_error' });
      return out;
    }
    if (f.score != null && !cats.some((k) => k.value === f.score)) {
      out.push({ loc: at('score'), msg: `score ${f.score} is not one of the categories' values (${cats.map((k) => k.value).join(', ')})`, type: 'enum' });
    }
    if (f.value != null) {
      const allowed = new Set(cats.flatMap((k) => (k.label != null ? [k.label, String(k.value)] : [String(k.value)])));
      const v = typeof f.value === 'string' || typeof f.value === 'number' ? String(f.value) : null;
      if (v === null || !allowed.has(v)) {
        out.push({ loc: at('value'), msg: `value ${JSON.stringify(f.value)} is not one of the categories (${[...allowed].join(', ')})`, type: 'enum' });
      }
    }
  }
  return out;
}

const createShape = {
  id: uuid.optional(),
  run_id: uuid.nullish(),
  trace_id: uuid.nullish(),
  session_id: uuid.nullish(),
  key,
  score: score.nullish(),
  value: feedbackValue.nullish(),
  comment: z.string().nullish(),
  correction: correction.nullish(),
  feedback_source: feedbackSourceSchema.nullish(),
  feedback_config: feedbackConfigSchema.nullish(),
  /** The published SDK sends the config under this camelCase key. */
  feedbackConfig: feedbackConfigSchema.nullish(),
  created_at: timestamp.nullish(),
  modified_at: timestamp.nullish(),
  /** The SDK sends the target run's start; accepted and not stored. */
  start_time: timestamp.nullish(),
  comparative_experiment_id: uuid.nullish(),
  feedback_group_id: uuid.nullish(),
  extend_trace_retention: z.boolean().nullish(),
};

/** POST /feedback, `feedback.<id>` multipart parts, and experiment upload scores. */
export const feedbackCreateSchema = z
  .object(createShape)
  .transform(({ feedbackConfig, ...rest }) => ({ ...rest, feedback_config: rest.feedback_config ?? feedbackConfig ?? null }))
  .superRefine((f, ctx) => {
    if (!f.run_id && !f.session_id) {
      ctx.addIssue({ code: 'custom', path: ['run_id'], message: 'Feedback needs a run_id, or a session_id for project feedback' });
    }
    for (const p of feedbackConfigProblems(f)) ctx.addIssue({ code: 'custom', path: p.loc, message: p.msg });
  });
export type FeedbackCreate = z.infer<typeof feedbackCreateSchema>;

/** PATCH /feedback/{id}: absent leaves a field unchanged, null clears it. */
export const feedbackUpdateSchema = z
  .object({
    score: score.nullish(),
    value: feedbackValue.nullish(),
    comment: z.string().nullish(),
    correction: correction.nullish(),
    feedback_config: feedbackConfigSchema.nullish(),
    feedbackConfig: feedbackConfigSchema.nullish(),
  })
  .transform(({ feedbackConfig, ...rest }) => (feedbackConfig !== undefined && rest.feedback_config === undefined ? { ...rest, feedback_config: feedbackConfig } : rest));
export type FeedbackUpdate = z.infer<typeof feedbackUpdateSchema>;

export const feedbackIdParamSchema = z.object({ feedback_id: uuid });

const queryArray = <T extends z.ZodTypeAny>(t: T) =>
  z.union([t, z.array(t)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

/** GET /feedback: every filter may repeat (the SDK repeats run, key and source). */
export const feedbackListQuerySchema = z.object({
  run: queryArray(uuid).optional(),
  trace: queryArray(uuid).optional(),
  session: queryArray(uuid).optional(),
  key: queryArray(z.string().min(1)).optional(),
  source: queryArray(z.string().min(1)).optional(),
  has_comment: queryBool.optional(),
  has_score: queryBool.optional(),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type FeedbackListQuery = z.infer<typeof feedbackListQuerySchema>;

/** The feedback object as the API returns it. */
export const feedbackSchema = z.object({
  id: z.string(),
  run_id: z.string().nullable(),
  trace_id: z.string().nullable(),
  session_id: z.string().nullable(),
  key: z.string(),
  score: z.number().nullable(),
  value: z.union([z.string(), z.number(), z.boolean(), jsonObject]).nullable(),
  comment: z.string().nullable(),
  correction: z.union([jsonObject, z.string()]).nullable(),
  feedback_source: feedbackSourceSchema.nullable(),
  feedback_config: feedbackConfigSchema.nullable(),
  comparative_experiment_id: z.string().nullable(),
  feedback_group_id: z.string().nullable(),
  created_at: z.string(),
  modified_at: z.string(),
});
export type Feedback = z.infer<typeof feedbackSchema>;

/**
 * One feedback write on the `feedback` topic: the whole state of the feedback after the write.
 * The store keeps the highest version per id, so a re-delivered event changes nothing and a
 * deletion is the same row with is_deleted = 1. Evolve additively.
 */
export const feedbackEventSchema = z.object({
  tenant_id: z.string(),
  id: z.string(),
  run_id: z.string().nullable(),
  trace_id: z.string().nullable(),
  session_id: z.string().nullable(),
  key: z.string(),
  score: z.number().nullable(),
  /** JSON text of the value; null when there is none. */
  value_json: z.string().nullable(),
  comment: z.string().nullable(),
  correction_json: z.string().nullable(),
  feedback_source: feedbackSourceSchema.nullable(),
  feedback_config: feedbackConfigSchema.nullable(),
  comparative_experiment_id: z.string().nullable(),
  feedback_group_id: z.string().nullable(),
  created_at: z.string(),
  modified_at: z.string(),
  version: z.number().int().nonnegative(),
  is_deleted: z.boolean(),
});
export type FeedbackEvent = z.infer<typeof feedbackEventSchema>;

/**
 * Builds the event of a new feedback; `version` must grow with every write of the same id. `texts`: the JSON
 * texts of a large value or correction, when the caller made them already (in slices).
 */
export function feedbackEventFromCreate(
  tenantId: string,
  f: FeedbackCreate & { id: string },
  version: number,
  nowMicros: number,
  texts: { value?: string; correction?: string } = {},
): FeedbackEvent {
  const created = f.created_at ?? microsToIso(nowMicros);
  return {
    tenant_id: tenantId,
    id: f.id,
    run_id: f.run_id ?? null,
    trace_id: f.trace_id ?? null,
    session_id: f.session_id ?? null,
    key: f.key,
    score: f.score ?? null,
    value_json: f.value == null ? null : (texts.value ?? JSON.stringify(f.value)),
    comment: f.comment ?? null,
    correction_json: f.correction == null ? null : (texts.correction ?? JSON.stringify(f.correction)),
    feedback_source: f.feedback_source ?? { type: 'api' },
    feedback_config: f.feedback_config ?? null,
    comparative_experiment_id: f.comparative_experiment_id ?? null,
    feedback_group_id: f.feedback_group_id ?? null,
    created_at: created,
    modified_at: f.modified_at ?? created,
    version,
    is_deleted: false,
  };
}

/**
 * The API object of a stored feedback event. `parsed`: the value and correction the event's texts were made from,
 * when the caller holds them (parsing a 25 MB correction back held the event loop some 30 ms).
 */
export function feedbackFromEvent(e: FeedbackEvent, parsed?: { value: unknown; correction: unknown }): Feedback {
  return {
    id: e.id,
    run_id: e.run_id,
    trace_id: e.trace_id,
    session_id: e.session_id,
    key: e.key,
    score: e.score,
    value: e.value_json == null ? null : ((parsed ? parsed.value : JSON.parse(e.value_json)) as Feedback['value']),
    comment: e.comment,
    correction: e.correction_json == null ? null : ((parsed ? parsed.correction : JSON.parse(e.correction_json)) as Feedback['correction']),
    feedback_source: e.feedback_source,
    feedback_config: e.feedback_config,
    comparative_experiment_id: e.comparative_experiment_id,
    feedback_group_id: e.feedback_group_id,
    created_at: e.created_at,
    modified_at: e.modified_at,
  };
}

/** Per feedback key: count, mean score and value counts (the run, trace and project `feedback_stats`). */
export const feedbackKeyStatsSchema = z.object({
  n: z.number(),
  avg: z.number().nullable(),
  stdev: z.number().nullable(),
  values: z.record(z.string(), z.number()),
  /** Same as n and avg, under the names of the issue. */
  count: z.number(),
  mean: z.number().nullable(),
});
export const feedbackStatsSchema = z.record(z.string(), feedbackKeyStatsSchema);
export type FeedbackStats = z.infer<typeof feedbackStatsSchema>;

/** One group of a stats query: feedback of one key with one value (value '' = no value). */
export interface FeedbackStatsGroup {
  key: string;
  value: string;
  n: number;
  scored: number;
  sum: number | null;
  sum_sq: number | null;
}

/** Rolls grouped counts up to feedback_stats; null when there is no feedback. */
export function rollupFeedbackStats(groups: FeedbackStatsGroup[]): FeedbackStats | null {
  if (groups.length === 0) return null;
  const acc = new Map<string, { n: number; scored: number; sum: number; sumSq: number; values: Record<string, number> }>();
  for (const g of groups) {
    const a = acc.get(g.key) ?? { n: 0, scored: 0, sum: 0, sumSq: 0, values: {} };
    a.n += Number(g.n);
    a.scored += Number(g.scored);
    a.sum += Number(g.sum ?? 0);
    a.sumSq += Number(g.sum_sq ?? 0);
    if (g.value !== '') a.values[g.value] = (a.values[g.value] ?? 0) + Number(g.n);
    acc.set(g.key, a);
  }
  const out: FeedbackStats = {};
  for (const [k, a] of [...acc].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))) {
    const avg = a.scored > 0 ? a.sum / a.scored : null;
    const stdev = avg === null ? null : Math.sqrt(Math.max(0, a.sumSq / a.scored - avg * avg));
    out[k] = { n: a.n, avg, stdev, values: a.values, count: a.n, mean: avg };
  }
  return out;
}

// --- presigned feedback tokens ---------------------------------------------------------------------

/** The longest a presigned feedback token may live. */
export const FEEDBACK_TOKEN_MAX_DAYS = 365;
const MINUTE_MS = 60_000;

const expiresIn = z
  .object({ days: z.number().int().min(0).nullish(), hours: z.number().int().min(0).nullish(), minutes: z.number().int().min(0).nullish() })
  .transform((d) => ((d.days ?? 0) * 1440 + (d.hours ?? 0) * 60 + (d.minutes ?? 0)) * MINUTE_MS)
  .refine((ms) => ms > 0 && ms <= FEEDBACK_TOKEN_MAX_DAYS * 86_400_000, `must be more than 0 and at most ${FEEDBACK_TOKEN_MAX_DAYS} days`);

/** One token of POST /feedback/tokens: the run and key the feedback will be for; 3 hours unless told. */
export const feedbackTokenCreateSchema = z
  .object({
    run_id: uuid,
    feedback_key: key,
    feedback_config: feedbackConfigSchema.nullish(),
    /** The Python SDK sends the id the feedback will get; each use of the token creates a feedback, so it is not used. */
    id: uuid.nullish(),
    expires_in: expiresIn.nullish(),
    expires_at: timestamp.nullish(),
  })
  .strict()
  .superRefine((t, ctx) => {
    if (t.expires_in != null && t.expires_at != null) ctx.addIssue({ code: 'custom', path: ['expires_at'], message: 'Send expires_in or expires_at, not both' });
  })
  .transform(({ run_id, feedback_key, feedback_config, expires_in, expires_at }) => ({ run_id, feedback_key, feedback_config: feedback_config ?? null, expires_in: expires_in ?? null, expires_at: expires_at ?? null }));
export type FeedbackTokenCreate = z.output<typeof feedbackTokenCreateSchema>;
/** POST /feedback/tokens takes one token's body (answered with one token) or a list (answered with a list). */
export const feedbackTokensCreateSchema = z.union([feedbackTokenCreateSchema, z.array(feedbackTokenCreateSchema).min(1).max(100)]);

export const feedbackTokenSchema = z.object({ id: uuid, url: z.string(), expires_at: z.string() });
export type FeedbackToken = z.infer<typeof feedbackTokenSchema>;

export const feedbackTokenParamSchema = z.object({ token: uuid });

/** GET /feedback/tokens?run_id=: a run's live tokens, paged as the SDKs page (limit/offset). */
export const feedbackTokenListQuerySchema = z
  .object({
    run_id: uuid,
    limit: z.coerce.number().int().min(1).max(100).default(100),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();
export type FeedbackTokenListQuery = z.infer<typeof feedbackTokenListQuerySchema>;

/** POST /feedback/tokens/{token}: the feedback's content, as the SDK's create_feedback_from_token sends it. */
export const feedbackFromTokenSchema = z
  .object({
    score: score.nullish(),
    value: feedbackValue.nullish(),
    comment: z.string().max(10_000).nullish(),
    correction: correction.nullish(),
    metadata: jsonObject.nullish(),
  })
  .strict();
export type FeedbackFromToken = z.infer<typeof feedbackFromTokenSchema>;

/** GET /feedback/tokens/{token}?score=&value=&comment=&correction=: a link a browser can follow. */
export const feedbackFromTokenQuerySchema = z
  .object({
    score: z.coerce.number().finite().optional(),
    value: z.string().max(10_000).optional(),
    comment: z.string().max(10_000).optional(),
    correction: z.string().max(10_000).optional(),
  })
  .strict();
