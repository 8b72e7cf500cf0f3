import { ParquetSchema } from '@dsnp/parquetjs';
import { EXPORT_FIELDS, type ExportField } from '@th/contracts';

type ParquetFieldDef = ConstructorParameters<typeof ParquetSchema>[0][string];

const uuid: ParquetFieldDef = { type: 'UTF8' };
const optionalUuid: ParquetFieldDef = { type: 'UTF8', optional: true };
const text: ParquetFieldDef = { type: 'UTF8' };
const optionalText: ParquetFieldDef = { type: 'UTF8', optional: true };
/** JSON documents are written as their text (UTF8), exactly as stored. */
const json: ParquetFieldDef = { type: 'UTF8', optional: true };
const timestamp: ParquetFieldDef = { type: 'TIMESTAMP_MICROS' };
const optionalTimestamp: ParquetFieldDef = { type: 'TIMESTAMP_MICROS', optional: true };
const count: ParquetFieldDef = { type: 'INT64' };
const cost: ParquetFieldDef = { type: 'DOUBLE', optional: true };
/** A standard 3-level Parquet LIST of strings. */
const stringList: ParquetFieldDef = { type: 'LIST', fields: { list: { repeated: true, fields: { element: { type: 'UTF8' } } } } };

/** The Parquet type of each field of the run record, as exported. */
export const PARQUET_FIELDS: Record<ExportField, ParquetFieldDef> = {
  id: uuid,
  tenant_id: uuid,
  session_id: uuid,
  trace_id: uuid,
  parent_run_id: optionalUuid,
  parent_run_ids: stringList,
  reference_example_id: optionalUuid,
  name: text,
  run_type: text,
  start_time: timestamp,
  end_time: optionalTimestamp,
  status: text,
  is_root: { type: 'BOOLEAN' },
  dotted_order: text,
  trace_tier: optionalText,
  inputs: json,
  outputs: json,
  error: optionalText,
  extra: json,
  events: json,
  tags: stringList,
  feedback_stats: json,
  total_tokens: count,
  prompt_tokens: count,
  completion_tokens: count,
  total_cost: cost,
  prompt_cost: cost,
  completion_cost: cost,
  first_token_time: optionalTimestamp,
};

/** ClickHouse expression that yields each field in the form the Parquet writer takes. */
export const FIELD_SQL: Record<ExportField, string> = {
  id: 'toString(id)',
  tenant_id: 'toString(tenant_id)',
  session_id: 'toString(session_id)',
  trace_id: 'toString(trace_id)',
  parent_run_id: 'if(parent_run_id IS NULL, NULL, toString(parent_run_id))',
  parent_run_ids: 'arrayMap(x -> toString(x), parent_run_ids)',
  reference_example_id: 'if(reference_example_id IS NULL, NULL, toString(reference_example_id))',
  name: 'name',
  run_type: 'toString(run_type)',
  start_time: 'toString(toUnixTimestamp64Micro(start_time))',
  end_time: 'if(end_time IS NULL, NULL, toString(toUnixTimestamp64Micro(assumeNotNull(end_time))))',
  status: 'toString(status)',
  is_root: 'is_root',
  dotted_order: 'dotted_order',
  trace_tier: "if(trace_tier = '', NULL, toString(trace_tier))",
  inputs: "if(inputs = '', NULL, inputs)",
  outputs: "if(outputs = '', NULL, outputs)",
  error: 'error',
  extra: "if(extra = '', NULL, extra)",
  events: "if(events = '', NULL, events)",
  tags: 'tags',
  feedback_stats: "if(feedback_stats = '', NULL, feedback_stats)",
  total_tokens: 'toString(total_tokens)',
  prompt_tokens: 'toString(prompt_tokens)',
  completion_tokens: 'toString(completion_tokens)',
  total_cost: 'total_cost',
  prompt_cost: 'prompt_cost',
  completion_cost: 'completion_cost',
  first_token_time: 'if(first_token_time IS NULL, NULL, toString(toUnixTimestamp64Micro(assumeNotNull(first_token_time))))',
};

const TIMESTAMP_FIELDS = new Set<ExportField>(['start_time', 'end_time', 'first_token_time']);
const COUNT_FIELDS = new Set<ExportField>(['total_tokens', 'prompt_tokens', 'completion_tokens']);
const LIST_FIELDS = new Set<ExportField>(['parent_run_ids', 'tags']);

/** The fields an export writes, in record order: all when none are named; `id` always (it keys resumption). */
export function exportFieldsOf(requested: readonly ExportField[] | null): ExportField[] {
  if (!requested || requested.length === 0) return [...EXPORT_FIELDS];
  const wanted = new Set<ExportField>(['id', ...requested]);
  return EXPORT_FIELDS.filter((f) => wanted.has(f));
}

export const PARQUET_COMPRESSIONS = ['UNCOMPRESSED', 'GZIP', 'SNAPPY', 'BROTLI'] as const;
export type ParquetCompression = (typeof PARQUET_COMPRESSIONS)[number];

/** Min/max statistics only where readers prune with them (times, counts); on text and JSON they cost time and bloat the footer. */
const WITH_STATISTICS = new Set<ExportField>(['start_time', 'end_time', 'first_token_time', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'is_root']);

function withOptions(def: ParquetFieldDef, compression: ParquetCompression, statistics: boolean): ParquetFieldDef {
  if (def.fields) return { ...def, fields: Object.fromEntries(Object.entries(def.fields).map(([k, v]) => [k, withOptions(v, compression, statistics)])) };
  return { ...def, compression, ...(statistics ? {} : { statistics: false }) };
}

export function parquetSchemaFor(fields: readonly ExportField[], compression: ParquetCompression = 'UNCOMPRESSED'): ParquetSchema {
  return new ParquetSchema(Object.fromEntries(fields.map((f) => [f, withOptions(PARQUET_FIELDS[f], compression, WITH_STATISTICS.has(f))])));
}

/** A row as ClickHouse returned it (FIELD_SQL forms) → the Parquet writer's row. */
export function toParquetRow(row: Record<string, unknown>, fields: readonly ExportField[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = row[f];
    if (v === null || v === undefined) out[f] = null;
    else if (TIMESTAMP_FIELDS.has(f) || COUNT_FIELDS.has(f)) out[f] = BigInt(v as string);
    else if (LIST_FIELDS.has(f)) out[f] = { list: (v as string[]).map((element) => ({ element })) };
    else out[f] = v;
  }
  return out;
}
