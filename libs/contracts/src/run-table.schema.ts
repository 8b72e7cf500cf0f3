import { z } from 'zod';
import { jsonObject } from './common.schema';
import type { RunEventFields } from './events.schema';
import { llmViewSchema } from './llm.schema';

/**
 * The runs table, declared once: every field of the run record and every column of the ClickHouse
 * `runs` table, with what each consumer needs to know about it. The insert encoders (ingest), the
 * record schema and `select` names (contracts), the read SQL and the API shape (query), the filter
 * language's fields (run-filter) and the Parquet export (contracts, export-worker) are derived from
 * RUN_FIELDS; run-table.integration.spec (ingest) fails when the migrations disagree with it.
 *
 * Key order is the run record's order: it is the order of RUN_RECORD_FIELDS, of the published
 * record's properties and of the exported Parquet fields.
 */

/** Everything the runs table needs, derived from the merged fields (ingest's computeRun). */
export interface ComputedRun {
  session_id: string;
  trace_id: string;
  parent_run_id: string | null;
  parent_run_ids: string[];
  dotted_order: string;
  is_root: boolean;
  start_time: string;
  status: 'pending' | 'success' | 'error';
  total_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  total_cost: number | null;
  prompt_cost: number | null;
  completion_cost: number | null;
  first_token_time: string | null;
  metadata: Record<string, string>;
}

/** A run's tokens and costs (its own, or summed over runs). */
export type RunUsage = Pick<ComputedRun, 'total_tokens' | 'prompt_tokens' | 'completion_tokens' | 'total_cost' | 'prompt_cost' | 'completion_cost'>;

/** The merge_state column: each field's priority, and the run's retention when it has one. */
export interface RunMergeState {
  p: Partial<Record<keyof RunEventFields, number>>;
  r?: Record<string, number>;
}

/** What the writer has for one run row: each column's insert takes its value from here. */
export interface RunRowSource {
  tenant_id: string;
  id: string;
  /** The merged fields as clients sent them. */
  fields: Partial<RunEventFields>;
  computed: ComputedRun;
  attachments: Record<string, unknown>;
  merge_state: RunMergeState;
  /** The LLM view the writer derived for an LLM run, null for other runs. */
  llm: object | null;
  received_at: string;
  /** Seconds since the epoch (the table's TTL). */
  expires_at: number;
  version: number;
}

/**
 * How a field can be filtered. A scalar kind compares the column (its scalar type and whether it can be
 * NULL come from the column's type): `uuid` eq/neq/in, `string` ordered, in and text matches, `number`
 * ordered and in, `time` ordered, `bool` eq/neq. `duration`: a number that also takes "5s", "200ms"
 * (the field's `sql`). `error`, `tags`, `metadata` and `json` (inputs/outputs) have operators of their own.
 */
export type RunFilterKind = 'uuid' | 'string' | 'number' | 'time' | 'bool' | 'duration' | 'error' | 'tags' | 'metadata' | 'json';

/**
 * How a field is exported to Parquet (whether it is optional comes from the column's type, `json`
 * and `cost` are always optional): `uuid` and `text` as UTF8 (`emptyText`: '' becomes NULL),
 * `json` as its text (UTF8, '' becomes NULL), `timestamp` TIMESTAMP_MICROS, `count` INT64,
 * `cost` DOUBLE, `boolean`, `list` a LIST of UTF8.
 */
export type RunExportKind = 'uuid' | 'text' | 'emptyText' | 'json' | 'timestamp' | 'count' | 'cost' | 'boolean' | 'list';

/** How a stored value becomes the record's (when the column's type and `json` do not say it). */
export type RunReadKind = 'jsonList' | 'attachments' | 'appPath' | 'tenant';

export interface RunColumnDef {
  /** The ClickHouse type, as system.columns spells it (no codec). */
  type: string;
  /** A String column holding a JSON document: insert's value is written as its JSON text, '' when absent. */
  json?: true;
  /** The column's value in a new row (a DateTime64: ISO text; a DateTime: seconds since the epoch). */
  insert: (r: RunRowSource) => unknown;
  /** insert's value as JSON text, where a faster writer than JSON.stringify exists. */
  jsonText?: (v: never) => string;
}

export interface RunFieldDef {
  /** The field in the published run record; absent: a column the API never answers. */
  record?: z.ZodType;
  /** The stored column; absent: a field computed when read (see select). */
  column?: RunColumnDef;
  /** The SQL a field without a column of its own is read with. */
  select?: string;
  /** The value expression a computed field is filtered with (a nullable String unless its filter kind says otherwise). */
  sql?: string;
  read?: RunReadKind;
  filter?: RunFilterKind;
  export?: RunExportKind;
}

const PLAIN_KEY = /^[a-z_]+$/;

/**
 * The merge_state text: what JSON.stringify writes for it (the same keys in the same order), built
 * directly: the priority object takes a different shape from run to run, and JSON.stringify of it was
 * the costliest value of the row. Anything unusual goes to JSON.stringify.
 */
export function mergeStateText(state: RunMergeState): string {
  const priority = state.p;
  let text = '{"p":{';
  let first = true;
  for (const k in priority) {
    const v = (priority as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || !PLAIN_KEY.test(k)) return JSON.stringify(state.r ? { p: priority, r: state.r } : { p: priority });
    text += first ? `"${k}":${v}` : `,"${k}":${v}`;
    first = false;
  }
  return state.r ? `${text}},"r":${JSON.stringify(state.r)}}` : `${text}}}`;
}

/** A run's latency in seconds, from its start and end (NULL while it has no end). */
export const LATENCY_SQL = "dateDiff('microsecond', start_time, end_time) / 1e6";

/**
 * A run's conversation key, as LangSmith derives it: the first of metadata session_id, conversation_id,
 * thread_id that is set (the SDK sends an unset one as null, stored as 'null'). Derived when read: no column.
 */
export const THREAD_ID_SQL = `multiIf(${['session_id', 'conversation_id', 'thread_id']
  .map((k) => `metadata['${k}'] NOT IN ('', 'null'), metadata['${k}']`)
  .join(', ')}, NULL)`;

const TIME = "DateTime64(6, 'UTC')";
const NULLABLE_TIME = `Nullable(${TIME})`;

export const RUN_FIELDS = {
  id: { record: z.string(), column: { type: 'UUID', insert: (r) => r.id }, filter: 'uuid', export: 'uuid' },
  tenant_id: { record: z.string(), column: { type: 'UUID', insert: (r) => r.tenant_id }, read: 'tenant', export: 'uuid' },
  session_id: { record: z.string(), column: { type: 'UUID', insert: (r) => r.computed.session_id }, filter: 'uuid', export: 'uuid' },
  trace_id: { record: z.string(), column: { type: 'UUID', insert: (r) => r.computed.trace_id }, filter: 'uuid', export: 'uuid' },
  thread_id: { record: z.string().nullable(), select: `${THREAD_ID_SQL} AS thread_id`, sql: THREAD_ID_SQL, filter: 'string' },
  parent_run_id: { record: z.string().nullable(), column: { type: 'Nullable(UUID)', insert: (r) => r.computed.parent_run_id }, filter: 'uuid', export: 'uuid' },
  parent_run_ids: { record: z.array(z.string()), column: { type: 'Array(UUID)', insert: (r) => r.computed.parent_run_ids }, export: 'list' },
  reference_example_id: {
    record: z.string().nullable(),
    column: { type: 'Nullable(UUID)', insert: (r) => r.fields.reference_example_id || null },
    filter: 'uuid',
    export: 'uuid',
  },
  name: { record: z.string(), column: { type: 'String', insert: (r) => r.fields.name ?? '' }, filter: 'string', export: 'text' },
  run_type: { record: z.string(), column: { type: 'LowCardinality(String)', insert: (r) => r.fields.run_type ?? '' }, filter: 'string', export: 'text' },
  start_time: { record: z.string(), column: { type: TIME, insert: (r) => r.computed.start_time }, filter: 'time', export: 'timestamp' },
  end_time: { record: z.string().nullable(), column: { type: NULLABLE_TIME, insert: (r) => r.fields.end_time || null }, filter: 'time', export: 'timestamp' },
  status: { record: z.string(), column: { type: 'LowCardinality(String)', insert: (r) => r.computed.status }, filter: 'string', export: 'text' },
  is_root: { record: z.boolean(), column: { type: 'Bool', insert: (r) => r.computed.is_root }, filter: 'bool', export: 'boolean' },
  dotted_order: { record: z.string(), column: { type: 'String', insert: (r) => r.computed.dotted_order }, filter: 'string', export: 'text' },
  trace_tier: {
    record: z.string().nullable(),
    column: { type: 'LowCardinality(String)', insert: (r) => r.fields.trace_tier ?? 'longlived' },
    filter: 'string',
    export: 'emptyText',
  },
  inputs: { record: jsonObject.nullable(), column: { type: 'String', json: true, insert: (r) => r.fields.inputs }, filter: 'json', export: 'json' },
  outputs: { record: jsonObject.nullable(), column: { type: 'String', json: true, insert: (r) => r.fields.outputs }, filter: 'json', export: 'json' },
  error: { record: z.string().nullable(), column: { type: 'Nullable(String)', insert: (r) => r.fields.error || null }, filter: 'error', export: 'text' },
  extra: { record: jsonObject.nullable(), column: { type: 'String', json: true, insert: (r) => r.fields.extra }, export: 'json' },
  events: { record: z.array(jsonObject).nullable(), column: { type: 'String', json: true, insert: (r) => r.fields.events }, read: 'jsonList', export: 'json' },
  tags: { record: z.array(z.string()), column: { type: 'Array(String)', insert: (r) => r.fields.tags ?? [] }, filter: 'tags', export: 'list' },
  serialized: { record: jsonObject.nullable(), column: { type: 'String', json: true, insert: (r) => r.fields.serialized } },
  // Answered from the feedback table when read; the column stays empty.
  feedback_stats: { record: jsonObject.nullable(), column: { type: 'String', json: true, insert: () => null }, export: 'json' },
  total_tokens: { record: z.number(), column: { type: 'UInt64', insert: (r) => r.computed.total_tokens }, filter: 'number', export: 'count' },
  prompt_tokens: { record: z.number(), column: { type: 'UInt64', insert: (r) => r.computed.prompt_tokens }, filter: 'number', export: 'count' },
  completion_tokens: { record: z.number(), column: { type: 'UInt64', insert: (r) => r.computed.completion_tokens }, filter: 'number', export: 'count' },
  total_cost: { record: z.number().nullable(), column: { type: 'Nullable(Float64)', insert: (r) => r.computed.total_cost }, filter: 'number', export: 'cost' },
  prompt_cost: { record: z.number().nullable(), column: { type: 'Nullable(Float64)', insert: (r) => r.computed.prompt_cost }, filter: 'number', export: 'cost' },
  completion_cost: {
    record: z.number().nullable(),
    column: { type: 'Nullable(Float64)', insert: (r) => r.computed.completion_cost },
    filter: 'number',
    export: 'cost',
  },
  first_token_time: {
    record: z.string().nullable(),
    column: { type: NULLABLE_TIME, insert: (r) => r.computed.first_token_time },
    filter: 'time',
    export: 'timestamp',
  },
  latency: {
    record: z.number().nullable(),
    select: `if(end_time IS NULL, NULL, ${LATENCY_SQL}) AS latency`,
    sql: LATENCY_SQL,
    filter: 'duration',
  },
  // Read from session_id, id and trace_id, which every read selects.
  app_path: { record: z.string(), select: 'session_id', read: 'appPath' },
  attachments: {
    record: z.record(z.string(), z.object({ mime_type: z.string(), size: z.number() })).optional(),
    column: { type: 'String', json: true, insert: (r) => (Object.keys(r.attachments).length ? r.attachments : null) },
    read: 'attachments',
  },
  /** LLM runs: normalized messages, provider/model, token and cost sources, spec-format validation problems. */
  llm: { record: llmViewSchema.nullable().optional(), column: { type: 'String', json: true, insert: (r) => r.llm } },
  metadata: { column: { type: 'Map(String, String)', insert: (r) => r.computed.metadata }, filter: 'metadata' },
  merge_state: {
    column: { type: 'String', json: true, insert: (r) => r.merge_state, jsonText: (v: RunMergeState) => mergeStateText(v) },
  },
  received_at: { column: { type: TIME, insert: (r) => r.received_at } },
  expires_at: { column: { type: "DateTime('UTC')", insert: (r) => r.expires_at } },
  version: { column: { type: 'UInt64', insert: (r) => r.version } },
  is_deleted: { column: { type: 'UInt8', insert: () => 0 } },
} as const satisfies Record<string, RunFieldDef>;

type Fields = typeof RUN_FIELDS;
type FieldsWith<P extends string> = { [K in keyof Fields]: Fields[K] extends Record<P, unknown> ? K : never }[keyof Fields];

export type RunRecordField = FieldsWith<'record'>;
export type RunColumnName = FieldsWith<'column'>;
export type RunFilterField = FieldsWith<'filter'>;
export type RunExportField = FieldsWith<'export'>;

const entries = Object.entries(RUN_FIELDS) as [keyof Fields, RunFieldDef][];
const namesWith = <K extends keyof Fields>(has: (d: RunFieldDef) => boolean): K[] => entries.filter(([, d]) => has(d)).map(([k]) => k as K);

/** The runs table's columns (every one the writer inserts), with their definitions. */
export const RUN_COLUMNS: readonly { name: RunColumnName; def: RunColumnDef }[] = entries
  .filter(([, d]) => d.column)
  .map(([name, d]) => ({ name: name as RunColumnName, def: d.column as RunColumnDef }));

/** Fields of the filter language that are fields of the run, in record order. */
export const RUN_FILTER_FIELDS: readonly RunFilterField[] = namesWith<RunFilterField>((d) => d.filter !== undefined);

/** Fields of the spec's "Run (trace) record, as exported", in the Parquet schema's order. */
export const RUN_EXPORT_FIELDS = namesWith<RunExportField>((d) => d.export !== undefined) as [RunExportField, ...RunExportField[]];

type RecordShape = { [K in RunRecordField]: Fields[K] extends { record: infer S } ? S : never };

/** The run record, as stored, read back and exported (the spec's 'Run (trace) record' table). */
export const runRecordSchema = z.object(Object.fromEntries(entries.filter(([, d]) => d.record).map(([k, d]) => [k, d.record])) as RecordShape);
