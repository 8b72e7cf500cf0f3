import { chTime, isoFromCh, rowBinaryDefault, rowBinaryWriter, rowBinaryWriterOf, type RowBinaryBuffer } from '@th/clickhouse';
import { mergeStateText as stateText, RUN_COLUMNS, toEpochMicros, type RunColumnName, type RunEventFields, type RunRowSource } from '@th/contracts';
import { jsonBytesOf } from '@th/platform';
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
  return dateTimeText(expiresAtSeconds(retention, tier, startIso));
}

/** The runs table's columns (RUN_FIELDS) in the order encodeRunRow (RowBinary, what the writer inserts) and runRow (JSONCompactEachRow, what the benchmarks' seeds and ceiling insert) write them. */
export const RUN_ROW_COLUMNS: readonly RunColumnName[] = RUN_COLUMNS.map((c) => c.name);

/** The values each column's insert reads (see RunRowSource). */
function rowSource(run: MergedRun, version: number, receivedAtIso: string, c: ComputedRun, llm: object | null): RunRowSource {
  const f = run.fields;
  return {
    tenant_id: run.tenant_id,
    id: run.id,
    fields: f,
    computed: c,
    attachments: run.attachments,
    merge_state: f.retention_days ? { p: run.priority, r: f.retention_days } : { p: run.priority },
    llm,
    received_at: receivedAtIso,
    expires_at: expiresAtSeconds(f.retention_days, f.trace_tier, c.start_time),
    version,
  };
}

const DATETIME64 = /^(Nullable\()?DateTime64\(/;

/** Each column's value in a JSONCompactEachRow line: a time as ClickHouse's text, a JSON document as rowJsonField writes it. */
const JSON_VALUES: readonly ((r: RunRowSource) => unknown)[] = RUN_COLUMNS.map(({ def }) => {
  const get = def.insert;
  if (def.json) return (r) => rowJsonField(get(r));
  if (DATETIME64.test(def.type)) {
    return (r) => {
      const v = get(r) as string | null;
      return v ? chTime(v) : null;
    };
  }
  if (def.type.startsWith('DateTime(')) return (r) => dateTimeText(get(r) as number);
  return get;
});

/** ClickHouse DateTime text of seconds since the epoch. */
function dateTimeText(seconds: number): string {
  const iso = new Date(seconds * 1000).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
}

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
  const c = computed ?? computeRun(run, receivedAtIso);
  const source = rowSource(run, version, receivedAtIso, c, llm);
  const values = JSON_VALUES.map((value) => value(source));
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

/** The merge_state column's text (see RunMergeState). */
export function mergeStateText(priority: MergedRun['priority'], retention?: Record<string, number>): string {
  return stateText(retention ? { p: priority, r: retention } : { p: priority });
}

/** Each column's RowBinary writer, reading its value from the row's source. */
const BINARY_WRITERS: readonly ((w: RowBinaryBuffer, r: RunRowSource) => void)[] = RUN_COLUMNS.map(({ def }) => {
  const get = def.insert;
  if (def.jsonText) {
    const text = def.jsonText as (v: unknown) => string;
    return (w, r) => w.string(text(get(r)));
  }
  if (def.json) {
    return (w, r) => {
      const v = get(r);
      const bytes = jsonBytesOf(v);
      if (bytes) w.utf8(bytes);
      else w.string(v === undefined || v === null ? '' : JSON.stringify(v));
    };
  }
  return rowBinaryWriterOf(def.type, get);
});

/**
 * The whole merged run as one RowBinary row of the runs table (RUN_ROW_COLUMNS, in order): the same
 * values runRow writes as JSON, which the engine stores identically (run-row-binary.integration.spec
 * compares the two column by column). Returns the row's sorting key (keyOf).
 *
 * The engine reads RowBinary without parsing: in chDB a bench run's row cost 3.5 µs to read against
 * 9 µs as JSONCompactEachRow, and in bench/ingest the service ran 8-10% more runs per second.
 */
export function encodeRunRow(w: RowBinaryBuffer, run: MergedRun, version: number, receivedAtIso: string, computed?: ComputedRun, llm: object | null = null): string {
  const c = computed ?? computeRun(run, receivedAtIso);
  const source = rowSource(run, version, receivedAtIso, c, llm);
  for (let i = 0; i < BINARY_WRITERS.length; i++) BINARY_WRITERS[i](w, source);
  return keyOf({ session_id: c.session_id, start_time: c.start_time });
}

const VALUE_WRITERS = RUN_COLUMNS.map(({ def }) => rowBinaryWriter(def.type));
const DEFAULT_WRITERS = RUN_COLUMNS.map(({ def }) => rowBinaryDefault(def.type));

/**
 * A delete marker for a version written under an old sorting key, as a RowBinary row: the key
 * columns, the version and is_deleted = 1, expires_at never; every other column its type's default,
 * the Nullable ones NULL.
 */
export function encodeTombstone(w: RowBinaryBuffer, tenantId: string, id: string, key: string, version: number): void {
  const [session_id, start_time] = key.split('|');
  const values: Partial<Record<RunColumnName, unknown>> = {
    tenant_id: tenantId,
    session_id,
    id,
    trace_id: id,
    start_time: `${start_time.replace(' ', 'T')}Z`,
    expires_at: NEVER_EXPIRES_SECONDS,
    version,
    is_deleted: 1,
  };
  RUN_COLUMNS.forEach(({ name }, i) => {
    const v = values[name];
    if (v === undefined) DEFAULT_WRITERS[i](w);
    else VALUE_WRITERS[i](w, v);
  });
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
