import { chTime, isoFromCh, type RowBinaryBuffer } from '@th/clickhouse';
import { toEpochMicros, type RunEventFields } from '@th/contracts';
import { computeRun, emptyRun, type ComputedRun, type FieldName, type MergedRun } from './run-merge';

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

/** expiresAtSeconds as ClickHouse DateTime text (the JSON row's value). */
export function expiresAt(retention: Record<string, number> | undefined, tier: string | null | undefined, startIso: string): string {
  const iso = new Date(expiresAtSeconds(retention, tier, startIso) * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

/**
 * The runs table's columns in the order encodeRunRow (RowBinary, what the writer inserts) and runRow
 * (JSONCompactEachRow, what the benchmarks' seeds and ceiling insert) write them.
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
 * Insert with RUN_ROW_INSERT_SETTINGS. The writer itself writes encodeRunRow's RowBinary rows; this
 * text form is for the benchmarks (the ingest ceiling is specified as a JSON body).
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

/** 2106-01-01, near ClickHouse DateTime's last second: a row without retention never expires. */
const NEVER_EXPIRES_SECONDS = Date.UTC(2106, 0, 1) / 1000;
/** ClickHouse's DateTime range: a UInt32 of seconds (the engine clamps a text value the same way). */
const clampSeconds = (s: number): number => (s < 0 ? 0 : s > 0xffff_ffff ? 0xffff_ffff : Math.floor(s));

/**
 * The row's expires_at (the runs table's TTL) in seconds since the epoch: start_time plus the
 * workspace's retention for its trace_tier, NEVER_EXPIRES_SECONDS without one.
 */
export function expiresAtSeconds(retention: Record<string, number> | undefined, tier: string | null | undefined, startIso: string): number {
  const days = retention?.[tier ?? 'longlived'];
  if (!days) return NEVER_EXPIRES_SECONDS;
  const s = Math.floor((toEpochMicros(startIso) ?? 0) / 1_000_000) + days * 86_400;
  return s >= NEVER_EXPIRES_SECONDS ? NEVER_EXPIRES_SECONDS : clampSeconds(s);
}

const PLAIN_KEY = /^[a-z_]+$/;

/**
 * The merge_state column: `{"p":{field:priority,...}}`, plus `"r":{tier:days}` with a retention, the
 * text JSON.stringify writes for that object (the same keys in the same order), built directly: the
 * priority object takes a different shape from run to run, and JSON.stringify of it was the costliest
 * value of the row (about 1 µs; this takes half). Anything unusual goes to JSON.stringify.
 */
export function mergeStateText(priority: MergedRun['priority'], retention?: Record<string, number>): string {
  let text = '{"p":{';
  let first = true;
  for (const k in priority) {
    const v = (priority as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || !PLAIN_KEY.test(k)) {
      return JSON.stringify(retention ? { p: priority, r: retention } : { p: priority });
    }
    text += first ? `"${k}":${v}` : `,"${k}":${v}`;
    first = false;
  }
  return retention ? `${text}},"r":${JSON.stringify(retention)}}` : `${text}}}`;
}

/** A DateTime64(6) value from an ISO timestamp (an unreadable one is the epoch, as chTime writes it). */
const micros = (iso: string): number => toEpochMicros(iso) ?? 0;

/** The JSON text a String column holds for a JSON field: '' when absent. */
const jsonColumn = (v: unknown): string => (v === undefined || v === null ? '' : JSON.stringify(v));

/**
 * The whole merged run as one RowBinary row of the runs table (RUN_ROW_COLUMNS, in order): the same
 * values runRow writes as JSON, which the engine stores identically (run-row-binary.integration.spec
 * compares the two column by column). Returns the row's sorting key (keyOf).
 *
 * The engine reads RowBinary without parsing: in chDB a bench run's row cost 3.5 µs to read against
 * 9 µs as JSONCompactEachRow, and in bench/ingest the service ran 8-10% more runs per second.
 */
export function encodeRunRow(w: RowBinaryBuffer, run: MergedRun, version: number, receivedAtIso: string, computed?: ComputedRun, llm: object | null = null): string {
  const f = run.fields;
  const c = computed ?? computeRun(run, receivedAtIso);
  w.uuid(run.tenant_id);
  w.uuid(c.session_id);
  w.uuid(run.id);
  w.uuid(c.trace_id);
  w.nullableUuid(c.parent_run_id);
  w.varUInt(c.parent_run_ids.length);
  for (const p of c.parent_run_ids) w.uuid(p);
  w.nullableUuid(f.reference_example_id || null);
  w.string(f.name ?? '');
  w.string(f.run_type ?? '');
  w.int64(micros(c.start_time));
  if (f.end_time) {
    w.notNull();
    w.int64(micros(f.end_time));
  } else w.null();
  w.string(c.status);
  w.bool(c.is_root);
  w.string(c.dotted_order);
  w.string(f.trace_tier ?? 'longlived');
  w.string(jsonColumn(f.inputs));
  w.string(jsonColumn(f.outputs));
  w.nullableString(f.error || null);
  w.string(jsonColumn(f.extra));
  w.string(jsonColumn(f.events));
  w.string(jsonColumn(f.serialized));
  const tags = f.tags ?? [];
  w.varUInt(tags.length);
  for (const t of tags) w.string(typeof t === 'string' ? t : String(t));
  const meta = Object.keys(c.metadata);
  w.varUInt(meta.length);
  for (const k of meta) {
    w.string(k);
    const v = c.metadata[k];
    w.string(typeof v === 'string' ? v : String(v));
  }
  w.string(''); // feedback_stats
  w.uint64(c.total_tokens);
  w.uint64(c.prompt_tokens);
  w.uint64(c.completion_tokens);
  w.nullableFloat64(c.total_cost);
  w.nullableFloat64(c.prompt_cost);
  w.nullableFloat64(c.completion_cost);
  if (c.first_token_time) {
    w.notNull();
    w.int64(micros(c.first_token_time));
  } else w.null();
  w.string(Object.keys(run.attachments).length ? JSON.stringify(run.attachments) : '');
  w.string(mergeStateText(run.priority, f.retention_days));
  w.string(llm ? JSON.stringify(llm) : '');
  w.int64(micros(receivedAtIso));
  w.uint32(expiresAtSeconds(f.retention_days, f.trace_tier, c.start_time));
  w.uint64(version);
  w.uint8(0);
  return keyOf({ session_id: c.session_id, start_time: c.start_time });
}

/**
 * A delete marker for a version written under an old sorting key, as a RowBinary row: the key
 * columns, the version and is_deleted = 1, expires_at never; every other column its type's default,
 * the Nullable ones NULL.
 */
export function encodeTombstone(w: RowBinaryBuffer, tenantId: string, id: string, key: string, version: number): void {
  const [session_id, start_time] = key.split('|');
  w.uuid(tenantId);
  w.uuid(session_id);
  w.uuid(id);
  w.uuid(id); // trace_id
  w.null(); // parent_run_id
  w.varUInt(0); // parent_run_ids
  w.null(); // reference_example_id
  w.string(''); // name
  w.string(''); // run_type
  w.int64(micros(`${start_time.replace(' ', 'T')}Z`));
  w.null(); // end_time
  w.string(''); // status
  w.bool(false); // is_root
  w.string(''); // dotted_order
  w.string(''); // trace_tier
  w.string(''); // inputs
  w.string(''); // outputs
  w.null(); // error
  w.string(''); // extra
  w.string(''); // events
  w.string(''); // serialized
  w.varUInt(0); // tags
  w.varUInt(0); // metadata
  w.string(''); // feedback_stats
  w.uint64(0); // total_tokens
  w.uint64(0); // prompt_tokens
  w.uint64(0); // completion_tokens
  w.null(); // total_cost
  w.null(); // prompt_cost
  w.null(); // completion_cost
  w.null(); // first_token_time
  w.string(''); // attachments
  w.string(''); // merge_state
  w.string(''); // llm
  w.int64(0); // received_at
  w.uint32(NEVER_EXPIRES_SECONDS); // expires_at
  w.uint64(version);
  w.uint8(1); // is_deleted
}

/** A JSONCompactEachRow line as the object a JSONEachRow line of the same row would hold. */
export function rowObject(columns: readonly string[], line: string): Record<string, unknown> {
  const values = JSON.parse(line) as unknown[];
  if (values.length !== columns.length) throw new Error(`row has ${values.length} values for ${columns.length} columns`);
  return Object.fromEntries(columns.map((c, i) => [c, values[i]]));
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
