import { RUN_TYPES, isCanonicalIsoInRange, microsToIso, toEpochMicros, type RunBatch, type RunCreate, type RunUpdate } from '@th/contracts';
import { EventLoopPacer } from '@th/platform';

/**
 * A hand-written fast path for the common shapes of run bodies (what the SDKs send): it accepts
 * only values it can vouch for and returns exactly what zod's runCreateSchema / runUpdateWithIdSchema /
 * runBatchSchema would return for them (unknown keys dropped, UUIDs lower-cased, timestamps as
 * canonical ISO). Anything else (an error, or an unusual but maybe valid form such as a
 * non-canonical timestamp string) returns null, and the caller falls back to zod, which then
 * produces the result or the 422 with its locations. fast-validate.spec.ts checks both agree.
 */

const RUN_TYPE_SET: ReadonlySet<string> = new Set(RUN_TYPES);
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const FAIL = Symbol('fail');
type Out = unknown | typeof FAIL;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function uuid(v: unknown): Out {
  if (typeof v !== 'string' || v.length !== 36 || !UUID_RE.test(v)) return FAIL;
  return v.toLowerCase();
}

// The timestamp schema's transform (common.schema.ts), without zod: a string or number it refuses is left to zod's 422.
function timestamp(v: unknown): Out {
  if (typeof v === 'string' && isCanonicalIsoInRange(v)) return v;
  if (typeof v !== 'string' && typeof v !== 'number') return FAIL;
  const micros = toEpochMicros(v);
  return micros === null ? FAIL : microsToIso(micros);
}

const str = (max: number, min = 0) => (v: unknown): Out => (typeof v === 'string' && v.length <= max && v.length >= min ? v : FAIL);
const anyStr = (v: unknown): Out => (typeof v === 'string' ? v : FAIL);
const hasOwn = Object.prototype.hasOwnProperty;
// JSON.parse gives plain objects; an own "__proto__" key is left to zod (its copy treats it specially).
const jsonObject = (v: unknown): Out => (isObject(v) && Object.getPrototypeOf(v) === Object.prototype && !hasOwn.call(v, '__proto__') ? v : FAIL);
const arrayOf = (item: (v: unknown) => Out) => (v: unknown): Out => {
  if (!Array.isArray(v)) return FAIL;
  for (let i = 0; i < v.length; i++) if (item(v[i]) !== v[i]) return FAIL; // items pass unchanged or the array goes to zod
  return v;
};
const tier = (v: unknown): Out => (v === 'longlived' || v === 'shortlived' ? v : FAIL);

interface Field {
  key: string;
  check: (v: unknown) => Out;
  /** null is a value (nullish fields) rather than a failure. */
  nullable: boolean;
  /** Required in a create body. */
  requiredOnCreate: boolean;
}

// runFields of run.schema.ts, in the same order (zod's output follows the shape's order).
const FIELDS: Field[] = [
  { key: 'name', check: str(1024), nullable: false, requiredOnCreate: true },
  { key: 'run_type', check: (v) => (typeof v === 'string' && RUN_TYPE_SET.has(v) ? v : FAIL), nullable: false, requiredOnCreate: true },
  { key: 'start_time', check: timestamp, nullable: false, requiredOnCreate: false },
  { key: 'end_time', check: timestamp, nullable: true, requiredOnCreate: false },
  { key: 'inputs', check: jsonObject, nullable: true, requiredOnCreate: false },
  { key: 'outputs', check: jsonObject, nullable: true, requiredOnCreate: false },
  { key: 'extra', check: jsonObject, nullable: true, requiredOnCreate: false },
  { key: 'events', check: arrayOf(jsonObject), nullable: true, requiredOnCreate: false },
  { key: 'error', check: anyStr, nullable: true, requiredOnCreate: false },
  { key: 'serialized', check: jsonObject, nullable: true, requiredOnCreate: false },
  { key: 'tags', check: arrayOf(anyStr), nullable: true, requiredOnCreate: false },
  { key: 'parent_run_id', check: uuid, nullable: true, requiredOnCreate: false },
  { key: 'trace_id', check: uuid, nullable: true, requiredOnCreate: false },
  { key: 'dotted_order', check: str(65536), nullable: true, requiredOnCreate: false },
  { key: 'session_id', check: uuid, nullable: true, requiredOnCreate: false },
  { key: 'session_name', check: str(1024), nullable: true, requiredOnCreate: false },
  { key: 'reference_example_id', check: uuid, nullable: true, requiredOnCreate: false },
  { key: 'revision_id', check: anyStr, nullable: true, requiredOnCreate: false },
  { key: 'address', check: anyStr, nullable: true, requiredOnCreate: false },
  { key: 'trace_tier', check: tier, nullable: true, requiredOnCreate: false },
  { key: 'child_runs', check: (v) => (Array.isArray(v) ? v : FAIL), nullable: true, requiredOnCreate: false },
];

function run(raw: unknown, create: boolean, idRequired: boolean): Record<string, unknown> | null {
  if (!isObject(raw)) return null;
  const out: Record<string, unknown> = {};
  const id = raw.id;
  if (id !== undefined) {
    const v = uuid(id);
    if (v === FAIL) return null;
    out.id = v;
  } else if (idRequired) return null;
  for (let i = 0; i < FIELDS.length; i++) {
    const f = FIELDS[i];
    const v = raw[f.key];
    if (v === undefined) {
      if (create && f.requiredOnCreate) return null;
      continue;
    }
    if (v === null) {
      if (!f.nullable) return null;
      out[f.key] = null;
      continue;
    }
    const c = f.check(v);
    if (c === FAIL) return null;
    out[f.key] = c;
  }
  return out;
}

/** runCreateSchema's result for a common-shape body, else null (use zod). */
export function fastRunCreate(raw: unknown): RunCreate | null {
  return run(raw, true, false) as RunCreate | null;
}

/** runUpdateWithIdSchema's result for a common-shape body, else null (use zod). */
export function fastRunUpdateWithId(raw: unknown): (RunUpdate & { id: string }) | null {
  return run(raw, false, true) as (RunUpdate & { id: string }) | null;
}

/** Checks a batch's runs one at a time (a step each); returns what fastRunBatch does. */
function* batchSteps(body: unknown): Generator<void, RunBatch | null> {
  if (!isObject(body)) return null;
  const { post: rawPost, patch: rawPatch } = body;
  if ((rawPost !== undefined && !Array.isArray(rawPost)) || (rawPatch !== undefined && !Array.isArray(rawPatch))) return null;
  const post: RunCreate[] = [];
  const patch: (RunUpdate & { id: string })[] = [];
  for (const r of rawPost ?? []) {
    const v = fastRunCreate(r);
    if (!v) return null;
    post.push(v);
    yield;
  }
  for (const r of rawPatch ?? []) {
    const v = fastRunUpdateWithId(r);
    if (!v) return null;
    patch.push(v);
    yield;
  }
  return { post, patch } as RunBatch;
}

/** runBatchSchema's result for a common-shape body, else null (use zod). */
export function fastRunBatch(body: unknown): RunBatch | null {
  const steps = batchSteps(body);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** fastRunBatch, giving the event loop way between slices (a 25 MB batch is some 20,000 runs to check). */
export async function fastRunBatchPaced(body: unknown, pacer = new EventLoopPacer()): Promise<RunBatch | null> {
  const steps = batchSteps(body);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (pacer.due()) await pacer.yield();
  }
}
