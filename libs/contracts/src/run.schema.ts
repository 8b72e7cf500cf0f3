import { z } from 'zod';
import { jsonObject, timestamp, uuid } from './common.schema';
import { RUN_FIELDS, runRecordSchema, type RunFieldDef } from './run-table.schema';

const nullish = <T extends z.ZodTypeAny>(t: T) => t.nullable().optional();

/** The run types of the published API (a run of another type is refused with 422, as the SDKs expect). */
export const RUN_TYPES = ['tool', 'chain', 'llm', 'retriever', 'embedding', 'prompt', 'parser'] as const;
export type RunType = (typeof RUN_TYPES)[number];

/** Fields a client may send for a run, shared by create and update. */
const runFields = {
  name: z.string().max(1024),
  run_type: z.enum(RUN_TYPES),
  start_time: timestamp,
  end_time: nullish(timestamp),
  inputs: nullish(jsonObject),
  outputs: nullish(jsonObject),
  extra: nullish(jsonObject),
  events: nullish(z.array(jsonObject)),
  error: nullish(z.string()),
  serialized: nullish(jsonObject),
  tags: nullish(z.array(z.string())),
  parent_run_id: nullish(uuid),
  trace_id: nullish(uuid),
  dotted_order: nullish(z.string().max(65536)),
  session_id: nullish(uuid),
  session_name: nullish(z.string().max(1024)),
  reference_example_id: nullish(uuid),
  revision_id: nullish(z.string()),
  address: nullish(z.string()),
  trace_tier: nullish(z.enum(['longlived', 'shortlived'])),
  child_runs: nullish(z.array(z.unknown())),
};

export const runCreateSchema = z.object({
  id: uuid.optional(),
  ...runFields,
  start_time: runFields.start_time.optional(),
});
export type RunCreate = z.infer<typeof runCreateSchema>;

/** A null in an update means "no change" (the Python SDK's update_run sends `name: null, run_type: null`). */
export const runUpdateSchema = z.object({
  id: uuid.optional(),
  ...Object.fromEntries(Object.entries(runFields).map(([k, v]) => [k, (v as z.ZodTypeAny).nullable().optional()])),
}) as unknown as z.ZodObject<{ id: z.ZodOptional<typeof uuid> } & { [K in keyof typeof runFields]: z.ZodOptional<z.ZodNullable<(typeof runFields)[K]>> }>;
export type RunUpdate = z.infer<typeof runUpdateSchema>;

/** A batch item must name its run. */
export const runUpdateWithIdSchema = runUpdateSchema.extend({ id: uuid });
export const runCreateWithIdSchema = runCreateSchema;

/** GET /public/run-attachments/{tenant_id}/{run_id}/{name}?expires=..&signature=..: a run attachment's download URL (`s3_urls`). */
export const runAttachmentDownloadParamSchema = z.object({ tenant_id: uuid, run_id: uuid, name: z.string().min(1).max(1024) });

export const runBatchSchema = z.object({
  post: z.array(runCreateSchema).optional().default([]),
  patch: z.array(runUpdateWithIdSchema).optional().default([]),
});
export type RunBatch = z.infer<typeof runBatchSchema>;

export const RUN_STATUSES = ['pending', 'success', 'error'] as const;

export type RunRecord = z.infer<typeof runRecordSchema>;

/** Every field name of the run record, in table order; used for `select` and exports. */
export const RUN_RECORD_FIELDS = Object.keys(runRecordSchema.shape) as (keyof RunRecord)[];
export const runFieldName = z.enum(RUN_RECORD_FIELDS as [keyof RunRecord, ...(keyof RunRecord)[]]);

/**
 * How many characters the values of one run query may carry in all. They reach the engine inside the SQL
 * (chDB: inlined literals, escaping may double them) or as URL parameters (ClickHouse over HTTP), and the
 * engine refuses a query over max_query_size (256 KiB): past this bound the answer is a 422, not a 500.
 */
export const RUN_QUERY_MAX_VALUE_CHARS = 65_536;

const charsOf = (v: unknown): number => {
  if (typeof v === 'string') return v.length;
  if (Array.isArray(v)) return v.reduce((n: number, x) => n + charsOf(x), 0);
  if (typeof v === 'object' && v !== null) return Object.entries(v).reduce((n, [k, x]) => n + k.length + charsOf(x), 0);
  return 0;
};

/** Refuses a run query whose values add up past RUN_QUERY_MAX_VALUE_CHARS, at its largest field. */
function boundQueryValues(q: Record<string, unknown>, ctx: z.RefinementCtx): void {
  let total = 0;
  let largest = { field: '', chars: -1 };
  for (const [field, v] of Object.entries(q)) {
    const chars = charsOf(v);
    total += chars;
    if (chars > largest.chars) largest = { field, chars };
  }
  if (total > RUN_QUERY_MAX_VALUE_CHARS) {
    ctx.addIssue({
      code: 'too_big',
      origin: 'string',
      maximum: RUN_QUERY_MAX_VALUE_CHARS,
      input: q[largest.field],
      path: [largest.field],
      message: `The values of a run query should add up to at most ${RUN_QUERY_MAX_VALUE_CHARS} characters, not ${total} (${largest.field}: ${largest.chars})`,
    });
  }
}

/** A page of runs holds at most this many; see RUN_QUERY_TREE_MAX_LIMIT for the one larger page. */
export const RUN_QUERY_MAX_LIMIT = 1_000;
/**
 * A trace's tree in one request: a query scoped to one `trace` whose `select` names only light fields
 * (no JSON documents, no error text) may ask for up to this many runs, so a viewer draws a 10,000-run
 * trace from one read instead of ten sequential cursor pages.
 */
export const RUN_QUERY_TREE_MAX_LIMIT = 10_000;

/** A field whose stored value is bounded in size (not a JSON document, not the error text). */
export const isLightRunField = (field: keyof RunRecord): boolean => {
  const def: RunFieldDef = RUN_FIELDS[field];
  return def.column?.json !== true && field !== 'error';
};

function boundLimit(q: { limit: number; trace?: string | null; select?: (keyof RunRecord)[] | null }, ctx: z.RefinementCtx): void {
  if (q.limit <= RUN_QUERY_MAX_LIMIT) return;
  const light = !!q.trace && !!q.select && q.select.length > 0 && q.select.every(isLightRunField);
  if (light) return;
  ctx.addIssue({
    code: 'too_big',
    origin: 'number',
    maximum: RUN_QUERY_MAX_LIMIT,
    input: q.limit,
    path: ['limit'],
    message: `limit should be at most ${RUN_QUERY_MAX_LIMIT}; up to ${RUN_QUERY_TREE_MAX_LIMIT} only for one trace with a select of light fields (no inputs, outputs, extra, events, serialized, llm, feedback_stats, error)`,
  });
}

const runQueryShape = z.object({
  session: z.array(uuid).nullish(),
  id: z.array(uuid).nullish(),
  trace: uuid.nullish(),
  parent_run: uuid.nullish(),
  run_type: z.string().nullish(),
  is_root: z.boolean().nullish(),
  error: z.boolean().nullish(),
  start_time: timestamp.nullish(),
  end_time: timestamp.nullish(),
  reference_example: z.array(uuid).nullish(),
  tags: z.array(z.string()).nullish(),
  metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).nullish(),
  filter: z.string().max(10000).nullish(),
  trace_filter: z.string().max(10000).nullish(),
  tree_filter: z.string().max(10000).nullish(),
  query: z.string().nullish(),
  execution_order: z.number().int().nullish(),
  select: z.array(runFieldName).nullish(),
  limit: z.number().int().min(1).max(RUN_QUERY_TREE_MAX_LIMIT).default(100),
  cursor: z.string().max(1000).nullish(),
  order: z.enum(['asc', 'desc']).default('desc'),
});
export const runQuerySchema = runQueryShape.superRefine(boundQueryValues).superRefine(boundLimit);
export type RunQuery = z.infer<typeof runQuerySchema>;

/**
 * A run as GET /runs/{id} and POST /runs/query answer it: the stored `attachments` (the name selecting them)
 * are answered as the SDKs read them, `s3_urls` with signed download URLs that need no API key.
 */
export const runResponseSchema = runRecordSchema.omit({ attachments: true }).extend({
  s3_urls: z.record(z.string(), z.object({ presigned_url: z.string().nullable(), mime_type: z.string() })).optional(),
  /** The breakdowns of the run's usage_metadata (input/output_token_details, input/output_cost_details), when outputs and extra are read. */
  prompt_token_details: z.record(z.string(), z.number()).nullable().optional(),
  completion_token_details: z.record(z.string(), z.number()).nullable().optional(),
  prompt_cost_details: z.record(z.string(), z.number()).nullable().optional(),
  completion_cost_details: z.record(z.string(), z.number()).nullable().optional(),
});
export type RunResponse = z.infer<typeof runResponseSchema>;

export const runQueryResponseSchema = z.object({
  runs: z.array(runResponseSchema.partial()),
  cursors: z.object({ next: z.string().nullable(), prev: z.string().nullable().optional() }),
});

export const runStatsQuerySchema = runQueryShape
  .omit({ select: true, limit: true, cursor: true, order: true })
  .extend({ data_source_type: z.string().nullish() })
  .superRefine(boundQueryValues);
export type RunStatsQuery = z.infer<typeof runStatsQuerySchema>;

export const runStatsSchema = z.object({
  run_count: z.number(),
  error_count: z.number(),
  error_rate: z.number().nullable(),
  latency_p50: z.number().nullable(),
  latency_p99: z.number().nullable(),
  first_token_p50: z.number().nullable(),
  first_token_p99: z.number().nullable(),
  total_tokens: z.number(),
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  median_tokens: z.number().nullable(),
  total_cost: z.number().nullable(),
  prompt_cost: z.number().nullable(),
  completion_cost: z.number().nullable(),
  streaming_rate: z.number().nullable(),
  last_run_start_time: z.string().nullable(),
  /** Per feedback key over the matched runs' feedback: n/count, avg/mean, stdev, value counts. */
  feedback_stats: jsonObject.nullable().optional(),
});
export type RunStats = z.infer<typeof runStatsSchema>;

export const runIdParamSchema = z.object({ run_id: uuid });
