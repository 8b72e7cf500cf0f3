import { RE2JS } from 're2js';

/**
 * Regular expressions written by users (price map match_pattern, JSON Schema pattern/patternProperties) run in
 * RE2 (re2js: linear in the input, no backtracking), never in V8's backtracking engine on the shared event loop.
 * A pattern is accepted when it is valid ECMAScript (with the `u` flag when `unicode`) and RE2 runs it with the
 * same meaning: backreferences (`\1`, `\k<name>`), lookahead and lookbehind (`(?=`, `(?!`, `(?<=`, `(?<!`) and
 * repeat counts over 1000 are refused. RE2 differs where ECMAScript is Unicode-aware: `\s` is ASCII whitespace
 * only and `.` matches `\r`, U+2028 and U+2029.
 */
export interface UserPattern {
  /** True when the pattern matches somewhere in `s` (an unanchored search, as RegExp.prototype.test). */
  test(s: string): boolean;
}

/** A user pattern RE2 cannot run, or one that is not valid ECMAScript; the message says why. */
export class UserPatternError extends Error {}

/** The escapes ECMAScript reads as backreferences: \1-\9 and \k<name> (outside and inside classes alike). */
function refuseBackreferences(pattern: string): void {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] !== '\\') continue;
    const next = pattern[i + 1] ?? '';
    if ((next >= '1' && next <= '9') || next === 'k') {
      throw new UserPatternError(`backreferences (\\${next}) are not supported: patterns run in a linear-time engine (RE2)`);
    }
    i++; // the escaped character is not itself an escape
  }
}

/** Compiles a user pattern; throws UserPatternError with the reason when it is refused. */
export function compileUserPattern(pattern: string, opts: { unicode?: boolean } = {}): UserPattern {
  try {
    // Syntax only: the pattern is parsed, never run, by V8.
    new RegExp(pattern, opts.unicode ? 'u' : '');
  } catch (err) {
    throw new UserPatternError(`not a valid regular expression: ${(err as Error).message}`);
  }
  refuseBackreferences(pattern);
  try {
    // RE2 itself refuses lookaround and repeat counts over 1000.
    return RE2JS.compile(RE2JS.translateRegExp(pattern));
  } catch (err) {
    throw new UserPatternError(`not supported by the linear-time engine (RE2): ${(err as Error).message}`);
  }
}

/** The error message when `pattern` is refused, or null when it is accepted. */
export function userPatternProblem(pattern: string, opts: { unicode?: boolean } = {}): string | null {
  try {
    compileUserPattern(pattern, opts);
    return null;
  } catch (err) {
    if (err instanceof UserPatternError) return err.message;
    throw err;
  }
}
