import type { ComputedRun, RunEvent, RunEventFields } from '@th/contracts';
import { microsToIso, toEpochMicros } from '@th/contracts';

export type { ComputedRun };

export type FieldName = keyof RunEventFields;

/** Fields a POST is authoritative for; a PATCH is authoritative for the rest. */
const POST_WINS: ReadonlySet<FieldName> = new Set<FieldName>([
  'session_id',
  'trace_id',
  'parent_run_id',
  'dotted_order',
  'name',
  'run_type',
  'start_time',
  'inputs',
  'serialized',
  'reference_example_id',
  'trace_tier',
]);

export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * The merged view of every POST and PATCH seen for one run. Each supplied field keeps the priority
 * of the op that set it; merging is a join (commutative, associative, idempotent), so the final run
 * is the same whatever the arrival order and however often an event is redelivered.
 */
export interface MergedRun {
  tenant_id: string;
  id: string;
  fields: Partial<RunEventFields>;
  priority: Partial<Record<FieldName, number>>;
  attachments: Record<string, { mime_type: string; size: number }>;
  /** Sorting keys (session_id|start_time) of versions already written, and the newest version. */
  storedKeys: string[];
  version: number;
  /** Set by the writer once this version's row is in ClickHouse. */
  landed?: boolean;
}

function priorityOf(op: RunEvent['op'], field: FieldName): number {
  const postWins = POST_WINS.has(field);
  return op === 'post' ? (postWins ? 2 : 1) : postWins ? 1 : 2;
}

function canonical(value: unknown): string {
  return JSON.stringify(value) ?? '';
}

function better(field: FieldName, a: unknown, b: unknown): boolean {
  // Deterministic tie-break between two values of equal priority: later end time, else larger text.
  if (field === 'end_time' || field === 'start_time') {
    const ta = toEpochMicros(String(a)) ?? 0;
    const tb = toEpochMicros(String(b)) ?? 0;
    if (ta !== tb) return field === 'end_time' ? ta > tb : ta < tb;
  }
  return canonical(a) > canonical(b);
}

export function emptyRun(tenantId: string, id: string): MergedRun {
  return { tenant_id: tenantId, id, fields: {}, priority: {}, attachments: {}, storedKeys: [], version: 0 };
}

/** Folds one event into the run. Returns true when anything changed. */
export function mergeEvent(run: MergedRun, event: RunEvent): boolean {
  let changed = false;
  const fields = run.fields as Record<string, unknown>;
  const supplied = event.fields as Record<string, unknown>;
  for (const key in supplied) {
    const value = supplied[key];
    if (value === undefined || value === null) continue; // null means "not supplied"
    const field = key as FieldName;
    const p = priorityOf(event.op, field);
    const cur = run.priority[field];
    if (cur === undefined || p > cur || (p === cur && better(field, value, fields[field]))) {
      if (cur === p && canonical(value) === canonical(fields[field])) continue;
      fields[field] = value;
      run.priority[field] = p;
      changed = true;
    }
  }
  return changed;
}

/** One dotted_order segment: UTC time to the microsecond, then the run id. */
export function dottedSegment(startTimeIso: string, id: string): string {
  const micros = toEpochMicros(startTimeIso) ?? 0;
  const d = new Date(Math.floor(micros / 1000));
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
  return `${stamp}${pad(micros % 1_000_000, 6)}Z${id}`;
}

/**
 * Splits a dotted_order into run ids and start times; null unless every segment has the SDK's shape
 * (YYYYMMDDTHHMMSS + 6 digits + Z + UUID). Character checks, not regexes: this is on the hot path.
 */
export function parseDottedOrder(dotted: string): { ids: string[]; times: string[] } | null {
  const ids: string[] = [];
  const times: string[] = [];
  let start = 0;
  for (;;) {
    const end = dotted.indexOf('.', start);
    const segEnd = end < 0 ? dotted.length : end;
    if (segEnd - start !== 58) return null;
    for (let i = 0; i < 22; i++) {
      const c = dotted.charCodeAt(start + i);
      if (i === 8 ? c !== 84 : i === 21 ? c !== 90 : c < 48 || c > 57) return null;
    }
    const id = dotted.slice(start + 22, segEnd).toLowerCase();
    if (!UUID_RE.test(id)) return null;
    ids.push(id);
    const t = dotted.slice(start, start + 21);
    times.push(`${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}.${t.slice(15, 21)}Z`);
    if (end < 0) break;
    start = end + 1;
  }
  return { ids, times };
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function findUsage(fields: Partial<RunEventFields>): Record<string, unknown> | null {
  const outputs = fields.outputs as Record<string, unknown> | undefined;
  const extra = fields.extra as { metadata?: Record<string, unknown> } | undefined;
  const candidates = [outputs?.usage_metadata, extra?.metadata?.usage_metadata];
  for (const c of candidates) if (c && typeof c === 'object') return c as Record<string, unknown>;
  return null;
}

export function computeRun(run: MergedRun, receivedAtIso: string): ComputedRun {
  const f = run.fields;
  const parsed = f.dotted_order ? parseDottedOrder(f.dotted_order) : null;
  const startTime = f.start_time ?? (parsed ? parsed.times[parsed.times.length - 1] : receivedAtIso);
  const parentFromOrder = parsed && parsed.ids.length > 1 ? parsed.ids[parsed.ids.length - 2] : null;
  const parentRunId = f.parent_run_id ?? parentFromOrder;
  const traceId = f.trace_id ?? (parsed ? parsed.ids[0] : parentRunId ? parentRunId : run.id);
  const dottedOrder = f.dotted_order ?? dottedSegment(startTime, run.id);
  const parentRunIds = parsed ? parsed.ids.slice(0, -1) : parentRunId ? [parentRunId] : [];

  const usage = findUsage(f);
  const prompt = num(usage?.input_tokens) ?? 0;
  const completion = num(usage?.output_tokens) ?? 0;
  const total = num(usage?.total_tokens) ?? prompt + completion;
  const promptCost = num(usage?.input_cost);
  const completionCost = num(usage?.output_cost);
  const totalCost = num(usage?.total_cost) ?? (promptCost !== null || completionCost !== null ? (promptCost ?? 0) + (completionCost ?? 0) : null);

  let firstToken: number | null = null;
  for (const e of f.events ?? []) {
    if (e.name !== 'new_token' || typeof e.time !== 'string') continue;
    const t = toEpochMicros(e.time);
    if (t !== null && (firstToken === null || t < firstToken)) firstToken = t;
  }

  const metadata: Record<string, string> = {};
  const meta = (f.extra as { metadata?: Record<string, unknown> } | undefined)?.metadata;
  if (meta && typeof meta === 'object') {
    for (const [k, v] of Object.entries(meta)) {
      if (v === undefined || k === 'usage_metadata') continue;
      metadata[k] = typeof v === 'string' ? v : JSON.stringify(v);
    }
  }

  return {
    session_id: f.session_id ?? NIL_UUID,
    trace_id: traceId,
    parent_run_id: parentRunId ?? null,
    parent_run_ids: parentRunIds,
    dotted_order: dottedOrder,
    is_root: !parentRunId,
    start_time: startTime,
    status: f.error ? 'error' : f.end_time ? 'success' : 'pending',
    total_tokens: Math.max(0, Math.round(total)),
    prompt_tokens: Math.max(0, Math.round(prompt)),
    completion_tokens: Math.max(0, Math.round(completion)),
    total_cost: totalCost,
    prompt_cost: promptCost,
    completion_cost: completionCost,
    first_token_time: firstToken === null ? null : microsToIso(firstToken),
    metadata,
  };
}
