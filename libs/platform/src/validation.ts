import { z } from 'zod';
import type { ValidationErrorItem } from '@th/contracts';
import { ValidationFailed } from './errors';
import { MAX_JSON_DEPTH } from './json-depth';
import { knownStorable } from './storable-marks';
import { EventLoopPacer } from './pacer';

/** Maps zod issues to the spec's ValidationError items ({loc, msg, type}). */
export function toValidationErrors(error: z.ZodError, root: (string | number)[]): ValidationErrorItem[] {
  return issuesToValidationErrors(error.issues, root);
}

function issuesToValidationErrors(issues: readonly z.core.$ZodIssue[], root: (string | number)[]): ValidationErrorItem[] {
  return issues.map((issue) => ({
    loc: [...root, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
    msg: issue.message,
    type: issueType(issue),
  }));
}

function issueType(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'missing' : `${issue.expected}_type`;
    case 'unrecognized_keys':
      return 'extra_forbidden';
    case 'too_big':
      return `${issue.origin}_too_long`;
    case 'too_small':
      return `${issue.origin}_too_short`;
    case 'invalid_format':
      return `${issue.format}_parsing`;
    case 'invalid_value':
      return 'enum';
    case 'invalid_union':
      return 'union';
    default:
      return issue.code;
  }
}

/** A value with many bad strings is answered with the first few, not one item per string. */
const MAX_TEXT_PROBLEMS = 20;

// Any character that may be a problem; the common string has none and costs one scan.
const SUSPECT = /[\u0000\ud800-\udfff]/;

/**
 * Why a string cannot be stored as text, or null. PostgreSQL refuses NUL in text and jsonb; a lone
 * surrogate has no UTF-8 form, so PostgreSQL's jsonb and ClickHouse's JSON reader refuse it and text
 * columns would keep U+FFFD instead.
 */
export function textProblem(s: string): { msg: string; type: string } | null {
  if (!SUSPECT.test(s)) return null;
  if (s.includes('\u0000')) return { msg: 'String should not contain the NUL character (\\u0000)', type: 'string_nul_character' };
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
    if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      i++;
      continue;
    }
    return { msg: `String should be valid Unicode: a lone surrogate (\\u${c.toString(16)}) at index ${i}`, type: 'string_unicode' };
  }
  return null;
}

/**
 * What no store can keep of a request value (parsed JSON, query or path parameters): nesting deeper than
 * MAX_JSON_DEPTH and, unless `text` is false, a string or key that textProblem refuses. The recursion stops at
 * MAX_JSON_DEPTH, so a deep value cannot overflow the stack; one shared path, copied only for what is reported.
 */
export function storableValueProblems(value: unknown, root: readonly (string | number)[], text = true): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const path: (string | number)[] = [...root];
  let tooDeep = false;
  const report = (p: { msg: string; type: string }) => out.push({ loc: [...path], ...p });
  const full = () => tooDeep || out.length >= MAX_TEXT_PROBLEMS;
  const walk = (v: unknown, depth: number): void => {
    if (typeof v === 'string') {
      const p = text ? textProblem(v) : null;
      if (p) report(p);
      return;
    }
    if (typeof v !== 'object' || v === null) return;
    if (knownStorable(v, depth)) return;
    if (depth >= MAX_JSON_DEPTH) {
      tooDeep = true;
      report({ msg: `Value should nest at most ${MAX_JSON_DEPTH} levels of objects and arrays`, type: 'json_too_deep' });
      return;
    }
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length && !full(); i++) {
        path.push(i);
        walk(v[i], depth + 1);
        path.pop();
      }
      return;
    }
    for (const k of Object.keys(v)) {
      if (full()) return;
      path.push(k);
      const p = text ? textProblem(k) : null;
      if (p) report({ msg: `${p.msg} (in a key)`, type: p.type });
      walk((v as Record<string, unknown>)[k], depth + 1);
      path.pop();
    }
  };
  walk(value, 0);
  return out;
}

export interface ParseOptions {
  /**
   * Keep strings as sent (no NUL or lone-surrogate check): run ingest, whose ClickHouse columns keep NUL
   * and whose fast path, which skips this function, must answer the same.
   */
  anyText?: boolean;
}

/**
 * Parses or throws ValidationFailed (→ 422) with locations under `root` (e.g. ['body']). A value no store
 * can keep (see storableValueProblems) is refused first, so nothing is written and zod never recurses into it.
 */
export function parseOrThrow<S extends z.ZodTypeAny>(schema: S, value: unknown, root: (string | number)[], opts: ParseOptions = {}): z.infer<S> {
  const problems = storableValueProblems(value, root, opts.anyText !== true);
  if (problems.length > 0) throw new ValidationFailed(problems);
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationFailed(toValidationErrors(result.error, root));
  return result.data;
}

/** Arrays with more items than this are validated an item at a time by parseOrThrowPaced. */
export const PACED_PARSE_MIN_ITEMS = 256;

const SIZE_CHECKS = new Set(['min_length', 'max_length', 'length_equals']);

/** The array schema's element, when its only checks are on its length (what parseOrThrowPaced can split). */
function splittableArray(schema: z.ZodTypeAny): { element: z.ZodTypeAny; checks: z.core.$ZodCheck[] } | null {
  const def = schema._zod.def as z.core.$ZodTypeDef & { element?: z.ZodTypeAny; checks?: z.core.$ZodCheck[] };
  if (def.type !== 'array' || !def.element) return null;
  const checks = def.checks ?? [];
  if (!checks.every((c) => SIZE_CHECKS.has((c._zod.def as { check: string }).check))) return null;
  return { element: def.element, checks };
}

/** Whether zod's own size checks of `schema` pass for an array of `length` items. */
function sizeAccepted(checks: z.core.$ZodCheck[], length: number): boolean {
  const payload = { value: new Array<undefined>(length), issues: [] as unknown[] };
  for (const c of checks) (c._zod.check as (p: typeof payload) => void)(payload);
  return payload.issues.length === 0;
}

/** A parse's state as zod's internals keep it: the value so far and the issues not yet finalized. */
interface RawPayload {
  value: unknown;
  issues: z.core.$ZodRawIssue[];
}

const runRaw = (schema: z.core.$ZodType, value: unknown, ctx: z.core.ParseContextInternal): RawPayload => {
  const r = schema._zod.run({ value, issues: [] }, ctx) as RawPayload | Promise<RawPayload>;
  if (r instanceof Promise) throw new z.core.$ZodAsyncError();
  return r;
};

/**
 * An object schema whose last member is a splittable array (an upload's rows) and no other member collects
 * unknown keys: then zod's issues for that member come after all the others', and the object's own checks
 * (refinements) run after both.
 */
function splittableObject(schema: z.ZodTypeAny, value: unknown): { key: string; element: z.ZodTypeAny; checks: z.core.$ZodCheck[]; shell: z.ZodTypeAny } | null {
  const def = schema._zod.def as z.core.$ZodObjectDef & { checks?: z.core.$ZodCheck[] };
  if (def.type !== 'object' || def.catchall !== undefined || typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const keys = Object.keys(def.shape);
  const key = keys[keys.length - 1];
  const items = (value as Record<string, unknown>)[key];
  const split = key === undefined ? null : splittableArray(def.shape[key] as z.ZodTypeAny);
  if (!split || !Array.isArray(items) || items.length <= PACED_PARSE_MIN_ITEMS || !sizeAccepted(split.checks, items.length)) return null;
  let shell = shells.get(schema);
  if (!shell) shells.set(schema, (shell = z.object({ ...(def.shape as Record<string, z.ZodTypeAny>), [key]: z.unknown() })));
  return { key, element: split.element, checks: def.checks ?? [], shell };
}

/** Each splittable object schema with its last member left unparsed. */
const shells = new WeakMap<z.ZodTypeAny, z.ZodTypeAny>();

/** zod's own rule (util.aborted): an issue not marked to continue stops the checks that have no `when`. */
const abortedFrom = (p: RawPayload, start: number) => p.issues.slice(start).some((i) => i.continue !== true);

/**
 * parseOrThrow for a large body: an array of thousands of items (a bulk write), or an object whose last member
 * is one (an upload's rows). The items are validated one at a time, with the event loop given way between
 * slices: one zod parse of 25 MB held it for hundreds of milliseconds. The answer is parseOrThrow's: the same
 * data, the same issues in the same order (the object's refinements run as zod runs them, after its members).
 * Anything else (small, other shapes, array checks other than on length) is parsed at once.
 */
export async function parseOrThrowPaced<S extends z.ZodTypeAny>(
  schema: S,
  value: unknown,
  root: (string | number)[],
  opts: ParseOptions = {},
  pacer = new EventLoopPacer(),
): Promise<z.infer<S>> {
  const array = splittableArray(schema);
  const isArray = array !== null && Array.isArray(value) && value.length > PACED_PARSE_MIN_ITEMS && sizeAccepted(array.checks, value.length);
  const object = isArray ? null : splittableObject(schema, value);
  if (!isArray && !object) return parseOrThrow(schema, value, root, opts);
  const problems = storableValueProblems(value, root, opts.anyText !== true);
  if (problems.length > 0) throw new ValidationFailed(problems);

  const ctx: z.core.ParseContextInternal = { async: false };
  const items = (isArray ? value : (value as Record<string, unknown>)[object!.key]) as unknown[];
  const element = isArray ? array!.element : object!.element;
  const shell = object ? runRaw(object.shell, value, ctx) : null;
  const payload: RawPayload = { value: undefined, issues: shell ? shell.issues : [] };
  const out: unknown[] = new Array(items.length);
  const prefix = object ? [object.key] : [];
  for (let i = 0; i < items.length; i++) {
    if (pacer.due()) await pacer.yield();
    const r = runRaw(element, items[i], ctx);
    for (const issue of r.issues) payload.issues.push({ ...issue, path: [...prefix, i, ...(issue.path ?? [])] });
    out[i] = r.value;
  }
  if (object) {
    payload.value = { ...(shell!.value as Record<string, unknown>), [object.key]: out };
    // The object's refinements, as zod's runChecks runs them after the members.
    let aborted = abortedFrom(payload, 0);
    for (const check of object.checks) {
      const when = check._zod.def.when;
      if (when ? payload.issues.some((i) => i.continue === false) || !when(payload as z.core.ParsePayload) : aborted) continue;
      const start = payload.issues.length;
      const r = check._zod.check(payload as z.core.ParsePayload<never>) as unknown;
      if (r instanceof Promise) throw new z.core.$ZodAsyncError();
      if (payload.issues.length === start) continue;
      z.core.util.attachSchema(payload.issues, start, schema);
      aborted ||= abortedFrom(payload, start);
    }
  } else payload.value = out;
  if (payload.issues.length > 0) {
    const issues = payload.issues.map((i) => z.core.util.finalizeIssue(i, ctx, z.core.config()));
    throw new ValidationFailed(issuesToValidationErrors(issues, root));
  }
  return payload.value as z.infer<S>;
}
