import { z } from 'zod';
import { jsonObject, queryArray, timestamp, uuid } from './common.schema';
import { RUN_TYPES, type RunRecord } from './run.schema';

/**
 * The SDKs' generated (v2) REST client: runs, traces, threads, sharing and public reads. Bodies follow the
 * types the published SDKs ship (JS `langsmith/resources/**`, Python `langsmith._openapi_client.types`).
 */

/** A v2 select, the run record fields it reads, and how the v2 run answers it. */
type V2Field = { reads: readonly (keyof RunRecord)[]; key: string; value: (r: Partial<RunRecord> & Record<string, unknown>) => unknown };

const PREVIEW_CHARS = 280;
/** A plain-text preview of a value (inputs, outputs, an error), as the v2 `*_preview` fields answer it. */
export const v2Preview = (v: unknown): string | undefined => {
  if (v === null || v === undefined) return undefined;
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > PREVIEW_CHARS ? s.slice(0, PREVIEW_CHARS) + '…' : s;
};
const raw = (v: unknown) => (v && typeof v === 'object' ? { raw: v } : undefined);
const field = (reads: (keyof RunRecord)[], key: string, value: V2Field['value']): V2Field => ({ reads, key, value });
const same = (f: keyof RunRecord, key: string = f): V2Field => field([f], key, (r) => r[f]);

/** Each select of the v2 run, as the SDKs' RunSelectField names it. */
export const V2_RUN_FIELDS = {
  ID: same('id'),
  NAME: same('name'),
  RUN_TYPE: same('run_type'),
  STATUS: same('status'),
  START_TIME: same('start_time'),
  END_TIME: same('end_time'),
  LATENCY_SECONDS: same('latency', 'latency_seconds'),
  FIRST_TOKEN_TIME: same('first_token_time'),
  ERROR: same('error'),
  ERROR_PREVIEW: field(['error'], 'error_preview', (r) => v2Preview(r.error)),
  EXTRA: same('extra'),
  METADATA: field(['extra'], 'metadata', (r) => (r.extra?.metadata as Record<string, unknown> | undefined) ?? {}),
  EVENTS: same('events'),
  INPUTS: same('inputs'),
  INPUTS_PREVIEW: field(['inputs'], 'inputs_preview', (r) => v2Preview(r.inputs)),
  OUTPUTS: same('outputs'),
  OUTPUTS_PREVIEW: field(['outputs'], 'outputs_preview', (r) => v2Preview(r.outputs)),
  MANIFEST: same('serialized', 'manifest'),
  PARENT_RUN_ID: same('parent_run_id'),
  PARENT_RUN_IDS: same('parent_run_ids'),
  PROJECT_ID: same('session_id', 'project_id'),
  TRACE_ID: same('trace_id'),
  THREAD_ID: same('thread_id'),
  DOTTED_ORDER: same('dotted_order'),
  IS_ROOT: same('is_root'),
  REFERENCE_EXAMPLE_ID: same('reference_example_id'),
  TOTAL_TOKENS: same('total_tokens'),
  PROMPT_TOKENS: same('prompt_tokens'),
  COMPLETION_TOKENS: same('completion_tokens'),
  TOTAL_COST: same('total_cost'),
  PROMPT_COST: same('prompt_cost'),
  COMPLETION_COST: same('completion_cost'),
  PROMPT_TOKEN_DETAILS: field(['outputs', 'extra'], 'prompt_token_details', (r) => raw(r.prompt_token_details)),
  COMPLETION_TOKEN_DETAILS: field(['outputs', 'extra'], 'completion_token_details', (r) => raw(r.completion_token_details)),
  PROMPT_COST_DETAILS: field(['outputs', 'extra'], 'prompt_cost_details', (r) => raw(r.prompt_cost_details)),
  COMPLETION_COST_DETAILS: field(['outputs', 'extra'], 'completion_cost_details', (r) => raw(r.completion_cost_details)),
  TAGS: same('tags'),
  APP_PATH: same('app_path'),
  ATTACHMENTS: field(['attachments'], 'attachments', (r) =>
    Object.fromEntries(
      Object.entries((r.s3_urls ?? {}) as Record<string, { presigned_url: string | null }>).map(([k, v]) => [k.replace(/^attachment\./, ''), v.presigned_url]),
    ),
  ),
  FEEDBACK_STATS: same('feedback_stats'),
  /** Answered by the share lookup of the service (the run record does not hold it). */
  SHARE_URL: field([], 'share_url', () => undefined),
} satisfies Record<string, V2Field>;
export type V2RunSelect = keyof typeof V2_RUN_FIELDS;
/**
 * Selects of the SDKs' enum that this service has no data for (pricing models, annotation queues, users,
 * thread evaluation, reference datasets): accepted and left out of the answer, as an unset property is.
 */
const V2_UNANSWERED_SELECTS = ['REFERENCE_DATASET_ID', 'PRICE_MODEL_ID', 'THREAD_EVALUATION_TIME', 'IS_IN_DATASET', 'LAST_QUEUED_AT', 'LS_USER_ID'] as const;
export const v2RunSelect = z.enum([...V2_UNANSWERED_SELECTS, ...(Object.keys(V2_RUN_FIELDS) as V2RunSelect[])]);

/** The run record fields a set of v2 selects reads (only `id` when none is given, as the published API does). */
export function v2RecordFields(selects: readonly string[] | null | undefined): (keyof RunRecord)[] {
  const fields = new Set<keyof RunRecord>(['id']);
  for (const s of selects ?? []) for (const f of (V2_RUN_FIELDS as Record<string, V2Field>)[s]?.reads ?? []) fields.add(f);
  return [...fields];
}

/** A run as the v2 API answers it: `id` and the selected properties only. */
export function toV2Run(record: Partial<RunRecord> & Record<string, unknown>, selects: readonly string[] | null | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { id: record.id };
  for (const s of selects ?? []) {
    const f = (V2_RUN_FIELDS as Record<string, V2Field>)[s];
    if (!f) continue;
    const v = f.value(record);
    if (v !== undefined) out[f.key] = v;
  }
  return out;
}

const V2_RUN_TYPES = RUN_TYPES.map((t) => t.toUpperCase()) as Uppercase<(typeof RUN_TYPES)[number]>[];
const filterExpr = z.string().max(10000);
const pageSize = (max: number) => z.coerce.number().int().min(1).max(max);
const cursor = z.string().max(1000);

/** POST /api/v2/runs/query. */
export const v2RunQuerySchema = z
  .object({
    project_ids: z.array(uuid).min(1).max(100).optional(),
    reference_dataset_id: uuid.optional(),
    ids: z.array(uuid).max(1000).optional(),
    trace_id: uuid.optional(),
    reference_examples: z.array(uuid).max(1000).optional(),
    run_type: z.enum(V2_RUN_TYPES as [string, ...string[]]).optional(),
    is_root: z.boolean().optional(),
    has_error: z.boolean().optional(),
    filter: filterExpr.optional(),
    trace_filter: filterExpr.optional(),
    tree_filter: filterExpr.optional(),
    min_start_time: timestamp.optional(),
    max_start_time: timestamp.optional(),
    /** Bounds (min inclusive, max exclusive) on feedback `modified_at` for the feedback conditions of the filters. */
    min_feedback_modified_at: timestamp.optional(),
    max_feedback_modified_at: timestamp.optional(),
    selects: z.array(v2RunSelect).max(100).optional(),
    page_size: pageSize(1000).default(100),
    cursor: cursor.optional(),
    include_subtree_usage: z.boolean().optional(),
    /** Natural-language search needs a language model, which this service does not run: refused, not ignored. */
    ai_search: z.string().max(10000).optional(),
  })
  .superRefine((q, ctx) => {
    if (q.ai_search !== undefined) ctx.addIssue({ code: 'custom', path: ['ai_search'], message: 'ai_search is not supported: it needs a language model, which this service does not run; use filter' });
  })
  .refine((q) => (q.project_ids === undefined) !== (q.reference_dataset_id === undefined), {
    message: 'Set exactly one of project_ids and reference_dataset_id',
    path: ['project_ids'],
  });
export type V2RunQuery = z.infer<typeof v2RunQuerySchema>;

export const v2RunIdParamSchema = z.object({ run_id: uuid });
/** GET /api/v2/runs/{run_id}. */
export const v2RunGetQuerySchema = z.object({
  project_id: uuid,
  selects: queryArray(v2RunSelect).optional(),
  start_time: timestamp.optional(),
});
/** GET /api/v2/runs/{run_id}/url. */
export const v2RunUrlQuerySchema = z.object({ project_id: uuid, trace_id: uuid, start_time: timestamp.optional() });

/** POST /api/v2/traces/query. */
export const v2TraceQuerySchema = z.object({
  project_id: uuid,
  trace_ids: z.array(uuid).max(1000).optional(),
  trace_filter: filterExpr.optional(),
  tree_filter: filterExpr.optional(),
  min_start_time: timestamp.optional(),
  max_start_time: timestamp.optional(),
  /** Bounds (min inclusive, max exclusive) on feedback `modified_at` for the feedback conditions of the filters. */
  min_feedback_modified_at: timestamp.optional(),
  max_feedback_modified_at: timestamp.optional(),
  selects: z.array(v2RunSelect).max(100).optional(),
  page_size: pageSize(100).default(20),
  cursor: cursor.optional(),
});
export type V2TraceQuery = z.infer<typeof v2TraceQuerySchema>;
export const v2TraceIdParamSchema = z.object({ trace_id: uuid });
/** GET /api/v2/traces/{trace_id}/runs. */
export const v2TraceRunsQuerySchema = z.object({
  project_id: uuid,
  filter: filterExpr.optional(),
  min_start_time: timestamp.optional(),
  max_start_time: timestamp.optional(),
  selects: queryArray(v2RunSelect).optional(),
});

/** A conversation key: whatever string the application put in its metadata, bounded. */
export const v2ThreadIdParamSchema = z.object({ thread_id: z.string().min(1).max(1024) });
/** POST /api/v2/threads/query. */
export const v2ThreadQuerySchema = z.object({
  project_id: uuid,
  filter: filterExpr.optional(),
  trace_filter: filterExpr.optional(),
  tree_filter: filterExpr.optional(),
  min_start_time: timestamp.optional(),
  max_start_time: timestamp.optional(),
  page_size: pageSize(100).default(20),
  cursor: cursor.optional(),
});
export type V2ThreadQuery = z.infer<typeof v2ThreadQuerySchema>;
export const V2_THREAD_TRACE_SELECTS = [
  'THREAD_ID', 'TRACE_ID', 'OP', 'PROMPT_TOKENS', 'COMPLETION_TOKENS', 'TOTAL_TOKENS', 'START_TIME', 'END_TIME', 'LATENCY', 'FIRST_TOKEN_TIME',
  'INPUTS_PREVIEW', 'OUTPUTS_PREVIEW', 'INPUTS', 'OUTPUTS', 'ERROR', 'PROMPT_COST', 'COMPLETION_COST', 'TOTAL_COST', 'PROMPT_TOKEN_DETAILS',
  'COMPLETION_TOKEN_DETAILS', 'PROMPT_COST_DETAILS', 'COMPLETION_COST_DETAILS', 'NAME', 'ERROR_PREVIEW',
] as const;
/** GET /api/v2/threads/{thread_id}/traces. */
export const v2ThreadTracesQuerySchema = z.object({
  project_id: uuid,
  filter: filterExpr.optional(),
  trace_filter: filterExpr.optional(),
  tree_filter: filterExpr.optional(),
  selects: queryArray(z.enum(V2_THREAD_TRACE_SELECTS)).optional(),
  page_size: pageSize(100).default(20),
  cursor: cursor.optional(),
});
export type V2ThreadTracesQuery = z.infer<typeof v2ThreadTracesQuerySchema>;
export const V2_THREAD_STATS_SELECTS = [
  'TURNS', 'FIRST_START_TIME', 'LAST_START_TIME', 'LAST_END_TIME', 'LATENCY_P50', 'LATENCY_P99', 'PROMPT_TOKENS', 'PROMPT_COST', 'COMPLETION_TOKENS',
  'COMPLETION_COST', 'TOTAL_TOKENS', 'TOTAL_COST', 'PROMPT_TOKEN_DETAILS', 'COMPLETION_TOKEN_DETAILS', 'PROMPT_COST_DETAILS', 'COMPLETION_COST_DETAILS',
  'FEEDBACK_STATS',
] as const;
/** GET /api/v2/threads/{thread_id}/stats. */
export const v2ThreadStatsQuerySchema = z.object({
  session_id: uuid,
  selects: queryArray(z.enum(V2_THREAD_STATS_SELECTS)).refine((s) => s.length > 0, 'At least one select is required'),
  filter: filterExpr.optional(),
});
export const V2_THREADS_AGGREGATE_SELECTS = [
  'THREAD_COUNT', 'TRACE_COUNT', 'TOTAL_TOKENS', 'TOTAL_COST', 'ERROR_RATE', 'STREAMING_RATE', 'LATENCY_P50', 'LATENCY_P99', 'MEDIAN_TOKENS',
  'FIRST_TOKEN_P50', 'FIRST_TOKEN_P99', 'PROMPT_TOKENS', 'COMPLETION_TOKENS', 'PROMPT_COST', 'COMPLETION_COST', 'PROMPT_TOKEN_DETAILS',
  'COMPLETION_TOKEN_DETAILS', 'PROMPT_COST_DETAILS', 'COMPLETION_COST_DETAILS', 'THREAD_FEEDBACK_STATS',
] as const;
/** POST /api/v2/threads/stats: aggregates over the threads of a project. */
export const v2ThreadsAggregateStatsSchema = z.object({
  project_id: uuid,
  select: z.array(z.enum(V2_THREADS_AGGREGATE_SELECTS)).min(1),
  filter: filterExpr.optional(),
  trace_filter: filterExpr.optional(),
  tree_filter: filterExpr.optional(),
  min_start_time: timestamp.optional(),
  max_start_time: timestamp.optional(),
});
export type V2ThreadsAggregateStats = z.infer<typeof v2ThreadsAggregateStatsSchema>;

/** POST /api/v2/runs/{run_id}/share: shares the run's trace. */
export const v2RunShareCreateSchema = z.object({ session_id: uuid, trace_id: uuid });
/** DELETE /api/v2/runs/{trace_id}/share with {session_id}. */
export const v2RunShareDeleteSchema = z.object({ session_id: uuid });
/** POST/GET/DELETE /api/v2/threads/{thread_id}/share (project_id in the body or the query). */
export const v2ThreadShareSchema = z.object({ project_id: uuid });
/** PUT /runs/{run_id}/share (the classic SDKs): the token they propose. */
export const runShareCreateSchema = z.object({ run_id: uuid.optional(), share_token: uuid.optional() });
export const runShareSchema = z.object({ run_id: z.string(), share_token: z.string() });
export type RunShare = z.infer<typeof runShareSchema>;

/** A share token in a public path; any other form is refused as not found (as an unknown token is). */
export const v2ShareTokenParamSchema = z.object({ share_token: z.string().max(100) });
export const v2PublicRunParamSchema = z.object({ share_token: z.string().max(100), run_id: uuid });
/** GET /api/v2/public/{share_token}/run/{run_id}. */
export const v2PublicRunGetQuerySchema = z.object({ selects: queryArray(v2RunSelect).optional(), start_time: timestamp.optional() });
/** POST /api/v2/public/{share_token}/runs/query. */
export const v2PublicRunQuerySchema = z.object({ selects: z.array(v2RunSelect).max(100).optional() });
/** POST /public/{share_token}/runs/query (the classic SDKs' list_shared_runs). */
export const publicRunQuerySchema = z.object({ id: z.array(uuid).max(1000).nullish(), cursor: cursor.nullish(), limit: z.number().int().min(1).max(1000).default(100) });

/** GET /api/v2/sessions and /api/v2/datasets: cursor pages over the classic lists. */
export const v2CursorPageQuerySchema = z.object({ page_size: pageSize(100).default(20), cursor: cursor.optional() });

/** POST /api/v2/datasets/{dataset_id}/experiment-runs. */
export const v2ExperimentRunQuerySchema = z
  .object({
    experiment_ids: z.array(uuid).min(1).max(50),
    example_ids: z.array(uuid).max(1000).optional(),
    selects: z.array(v2RunSelect).max(100).optional(),
    /** Pairwise feedback of this comparative experiment becomes the runs' feedback_stats. */
    comparative_experiment_id: uuid.optional(),
    /** Per experiment, filter expressions its root run on an example must all match for the example to be listed. */
    filters: z.record(z.string(), z.array(filterExpr).min(1).max(20)).optional(),
    /** Examples ordered by their run's mean score of one feedback key (one experiment only). */
    sort: z
      .object({
        by: z.string().min(1).max(200).transform((b) => b.replace(/^feedback\./, '')).pipe(z.string().min(1)),
        order: z.string().transform((o) => o.toUpperCase()).pipe(z.enum(['ASC', 'DESC'])).default('DESC'),
      })
      .optional(),
    page_size: pageSize(100).default(20),
    cursor: cursor.optional(),
  })
  .superRefine((q, ctx) => {
    for (const key of Object.keys(q.filters ?? {})) {
      if (!q.experiment_ids.includes(key)) ctx.addIssue({ code: 'custom', path: ['filters', key], message: 'filters are keyed by one of experiment_ids' });
    }
    if (q.sort && q.experiment_ids.length !== 1) ctx.addIssue({ code: 'custom', path: ['sort'], message: 'sort by feedback needs exactly one experiment in experiment_ids' });
  });
export type V2ExperimentRunQuery = z.infer<typeof v2ExperimentRunQuerySchema>;

/** A v2 page: the items and the cursor of the next page ('' on the last, as the generated clients stop on). */
export const v2PageSchema = <T extends z.ZodTypeAny>(item: T) => z.object({ items: z.array(item), next_cursor: z.string() });
export const v2RunSchema = jsonObject;
