import type { z } from 'zod';
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

/**
 * parseOrThrow for a large array body (a bulk write of thousands of items), its items validated one at a time
 * with the event loop given way between slices: one zod parse of 25 MB held it for hundreds of milliseconds.
 * The same answer as parseOrThrow: the same data, the same issues in the same order. Any other value, a small
 * array, or an array schema with checks other than on its length, is parsed at once.
 */
export async function parseOrThrowPaced<S extends z.ZodTypeAny>(
  schema: S,
  value: unknown,
  root: (string | number)[],
  opts: ParseOptions = {},
  pacer = new EventLoopPacer(),
): Promise<z.infer<S>> {
  const split = splittableArray(schema);
  if (!split || !Array.isArray(value) || value.length <= PACED_PARSE_MIN_ITEMS || !sizeAccepted(split.checks, value.length)) {
    return parseOrThrow(schema, value, root, opts);
  }
  const problems = storableValueProblems(value, root, opts.anyText !== true);
  if (problems.length > 0) throw new ValidationFailed(problems);
  const data: unknown[] = new Array(value.length);
  const issues: z.core.$ZodIssue[] = [];
  for (let i = 0; i < value.length; i++) {
    if (pacer.due()) await pacer.yield();
    const r = split.element.safeParse(value[i]);
    if (r.success) data[i] = r.data;
    else for (const issue of r.error.issues) issues.push({ ...issue, path: [i, ...issue.path] });
  }
  if (issues.length > 0) throw new ValidationFailed(issuesToValidationErrors(issues, root));
  return data as z.infer<S>;
}
