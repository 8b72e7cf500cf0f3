import type { z } from 'zod';
import type { ValidationErrorItem } from '@th/contracts';
import { ValidationFailed } from './errors';

/** Maps zod issues to the spec's ValidationError items ({loc, msg, type}). */
export function toValidationErrors(error: z.ZodError, root: (string | number)[]): ValidationErrorItem[] {
  return error.issues.map((issue) => ({
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

/** Parses or throws ValidationFailed (→ 422) with locations under `root` (e.g. ['body']). */
export function parseOrThrow<S extends z.ZodTypeAny>(schema: S, value: unknown, root: (string | number)[]): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ValidationFailed(toValidationErrors(result.error, root));
  return result.data;
}
