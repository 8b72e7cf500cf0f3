import { isCanonicalIso, toEpochMicros, type RunEventFields } from '@th/contracts';
import { computeRun, emptyRun, type ComputedRun, type FieldName, type MergedRun } from './run-merge';

/** ClickHouse DateTime64(6) text, UTC. */
export function chTime(iso: string): string {
  if (isCanonicalIso(iso)) return `${iso.slice(0, 10)} ${iso.slice(11, 26)}`;
  const micros = toEpochMicros(iso) ?? 0;
  const ms = Math.floor(micros / 1000);
  const base = new Date(ms).toISOString(); // 2026-11-22T04:04:29.623Z
  return `${base.slice(0, 10)} ${base.slice(11, 23)}${String(micros - ms * 1000).padStart(3, '0')}`;
}

const jsonText = (v: unknown): string => (v === undefined || v === null ? '' : JSON.stringify(v));

/**
 * Settings every insert of run rows takes: a JSON object or array in a String column is stored as its
 * JSON text. The row then carries the field's JSON as it is instead of a JSON string literal of it
 * (one stringify, no second escaping pass, a shorter row); the stored text is the same.
 */
export const RUN_ROW_INSERT_SETTINGS = { input_format_json_read_objects_as_strings: 1, input_format_json_read_arrays_as_strings: 1 } as const;

/**
 * A JSON field as the row carries it: an object or array as itself (the engine reads its JSON text into
 * the String column, see RUN_ROW_INSERT_SETTINGS), anything else as a string holding its JSON text.
 */
function rowJsonField(v: unknown): unknown {
  return v !== null && typeof v === 'object' ? v : jsonText(v);
}

export interface RunRowKey {
  session_id: string;
  start_time: string;
}
export const keyOf = (k: RunRowKey): string => `${k.session_id}|${chTime(k.start_time)}`;

/** ClickHouse DateTime's last second: a row without retention never expires. */
export const NEVER_EXPIRES = '2106-01-01 00:00:00';

/** The row's expires_at (the runs table's TTL): start_time plus the workspace's retention for its trace_tier. */
export function expiresAt(retention: Record<string, number> | undefined, tier: string | null | undefined, startIso: string): string {
  const days = retention?.[tier ?? 'longlived'];
  if (!days) return NEVER_EXPIRES;
  const ms = Math.floor((toEpochMicros(startIso) ?? 0) / 1000) + days * 86_400_000;
  const iso = new Date(ms).toISOString();
  return iso < '2106' ? `${iso.slice(0, 10)} ${iso.slice(11, 19)}` : NEVER_EXPIRES;
}

/**
 * The runs table's columns in the order runRow writes them. The writer inserts rows as
 * JSONCompactEachRow (an array of values per row, the columns named once in the INSERT): the engine
 * then parses values by position instead of matching about 40 key names in every row, which cost it
 * a quarter of its insert time, and each row is some 500 bytes shorter.
 */
export const RUN_ROW_COLUMNS = [
  'tenant_id', 'session_id', 'id', 'trace_id', 'parent_run_id', 'parent_run_ids', 'reference_example_id', 'name', 'run_type',
  'start_time', 'end_time', 'status', 'is_root', 'dotted_order', 'trace_tier', 'inputs', 'outputs', 'error', 'extra', 'events',
  'serialized', 'tags', 'metadata', 'feedback_stats', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'total_cost',
  'prompt_cost', 'completion_cost', 'first_token_time', 'attachments', 'merge_state', 'llm', 'received_at', 'expires_at', 'version',
  'is_deleted',
] as const;

/**
 * The whole merged run as one JSONCompactEachRow line of the runs table (values in RUN_ROW_COLUMNS
 * order). `llm`: the LLM view the writer derived for an LLM run (an object), null for other runs.
 * Insert with RUN_ROW_INSERT_SETTINGS.
 *
 * The values go into one array serialized by one JSON.stringify: the line comes out as one flat
 * string, where concatenating its pieces built a rope of some eighty parts that had to be flattened
 * again to be written into the insert body (most of the writer's allocation per run).
 */
export function runRow(run: MergedRun, version: number, receivedAtIso: string, computed?: ComputedRun, llm: object | null = null): { line: string; key: string } {
  const f = run.fields;
  const c = computed ?? computeRun(run, receivedAtIso);
  const values = [
    run.tenant_id,
    c.session_id,
    run.id,
    c.trace_id,
    c.parent_run_id,
    c.parent_run_ids,
    f.reference_example_id || null,
    f.name ?? '',
    f.run_type ?? '',
    chTime(c.start_time),
    f.end_time ? chTime(f.end_time) : null,
    c.status,
    c.is_root,
    c.dotted_order,
    f.trace_tier ?? 'longlived',
    rowJsonField(f.inputs),
    rowJsonField(f.outputs),
    f.error || null,
    rowJsonField(f.extra),
    rowJsonField(f.events),
    rowJsonField(f.serialized),
    f.tags ?? [],
    c.metadata,
    '',
    c.total_tokens,
    c.prompt_tokens,
    c.completion_tokens,
    c.total_cost,
    c.prompt_cost,
    c.completion_cost,
    c.first_token_time ? chTime(c.first_token_time) : null,
    Object.keys(run.attachments).length ? run.attachments : '',
    f.retention_days ? { p: run.priority, r: f.retention_days } : { p: run.priority },
    llm ?? '',
    chTime(receivedAtIso),
    expiresAt(f.retention_days, f.trace_tier, c.start_time),
    version,
    0,
  ];
  return { line: JSON.stringify(values), key: keyOf({ session_id: c.session_id, start_time: c.start_time }) };
}

/** A JSONCompactEachRow line as the object a JSONEachRow line of the same row would hold. */
export function rowObject(columns: readonly string[], line: string): Record<string, unknown> {
  const values = JSON.parse(line) as unknown[];
  if (values.length !== columns.length) throw new Error(`row has ${values.length} values for ${columns.length} columns`);
  return Object.fromEntries(columns.map((c, i) => [c, values[i]]));
}

/**
 * A delete marker for a version written under an old sorting key, as a runRow line: the key columns,
 * the version and is_deleted, and expires_at as its column default; every other value null, which the
 * engine stores as its type's default (input_format_null_as_default).
 */
export function tombstoneRow(tenantId: string, id: string, key: string, version: number): string {
  const [session_id, start_time] = key.split('|');
  const values: unknown[] = RUN_ROW_COLUMNS.map(() => null);
  const set = (column: (typeof RUN_ROW_COLUMNS)[number], v: unknown) => (values[RUN_ROW_COLUMNS.indexOf(column)] = v);
  set('tenant_id', tenantId);
  set('session_id', session_id);
  set('id', id);
  set('trace_id', id);
  set('start_time', start_time);
  set('expires_at', NEVER_EXPIRES);
  set('version', version);
  set('is_deleted', 1);
  return JSON.stringify(values);
}

/** Columns read back when the writer needs a run it does not hold in memory. */
export const STORED_RUN_COLUMNS =
  'tenant_id, id, session_id, trace_id, parent_run_id, dotted_order, name, run_type, start_time, end_time, inputs, outputs, error, extra, events, serialized, tags, reference_example_id, trace_tier, attachments, merge_state, version';

export interface StoredRunRow {
  tenant_id: string;
  id: string;
  session_id: string;
  trace_id: string;
  parent_run_id: string | null;
  dotted_order: string;
  name: string;
  run_type: string;
  start_time: string;
  end_time: string | null;
  inputs: string;
  outputs: string;
  error: string | null;
  extra: string;
  events: string;
  serialized: string;
  tags: string[];
  reference_example_id: string | null;
  trace_tier: string;
  attachments: string;
  merge_state: string;
  version: number | string;
}

const isoFromCh = (v: string): string => (v.endsWith('Z') ? v : `${v.replace(' ', 'T')}Z`);
const parseJson = (v: string): unknown => (v === '' ? undefined : JSON.parse(v));

/** Rebuilds the merged state from a stored row: only fields a client supplied come back. */
export function mergedFromRow(row: StoredRunRow): MergedRun {
  const run = emptyRun(row.tenant_id, row.id);
  const state = JSON.parse(row.merge_state || '{"p":{}}') as { p: Partial<Record<FieldName, number>>; r?: Record<string, number> };
  const fields = run.fields as Record<string, unknown>;
  const values: Record<FieldName, unknown> = {
    session_id: row.session_id,
    trace_id: row.trace_id,
    parent_run_id: row.parent_run_id,
    dotted_order: row.dotted_order,
    name: row.name,
    run_type: row.run_type,
    start_time: isoFromCh(row.start_time),
    end_time: row.end_time ? isoFromCh(row.end_time) : null,
    inputs: parseJson(row.inputs),
    outputs: parseJson(row.outputs),
    extra: parseJson(row.extra),
    events: parseJson(row.events),
    error: row.error,
    serialized: parseJson(row.serialized),
    tags: row.tags,
    reference_example_id: row.reference_example_id,
    trace_tier: row.trace_tier,
    retention_days: state.r,
  } satisfies Record<keyof RunEventFields, unknown>;
  for (const [field, p] of Object.entries(state.p) as [FieldName, number][]) {
    fields[field] = values[field];
    run.priority[field] = p;
  }
  run.attachments = row.attachments ? (JSON.parse(row.attachments) as MergedRun['attachments']) : {};
  run.version = Number(row.version);
  run.storedKeys = [keyOf({ session_id: row.session_id, start_time: isoFromCh(row.start_time) })];
  return run;
}
