import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import addFormats from 'ajv-formats';
import { compileUserPattern, UserPatternError, type UserPattern, type ValidationErrorItem } from '@th/contracts';
import { ValidationFailed } from '@th/platform';

/** ajv's RegExpEngine: the flags ajv passes are "u" or "". ajv keys compiled patterns by toString(). */
const re2RegExp: RegExpEngine = Object.assign(
  (pattern: string, flags: string): UserPattern & { toString(): string } => {
    try {
      const re = compileUserPattern(pattern, { unicode: flags.includes('u') });
      return { test: (s: string) => re.test(s), toString: () => `/${pattern}/${flags}` };
    } catch (err) {
      if (err instanceof UserPatternError) throw new Error(`pattern ${JSON.stringify(pattern)} is ${err.message}`);
      throw err;
    }
  },
  { code: 're2RegExp' },
);

/**
 * JSON Schema enforcement for dataset examples (ajv, draft-07 with formats). Compiled validators are cached
 * by the schema's text, so a dataset's schema is compiled once per process.
 */
export class ExampleSchemaValidator {
  // pattern and patternProperties run in RE2 (linear time), with ajv's default `u` flag; a pattern RE2 refuses
  // fails the schema's compilation, so checkSchema answers 422 when the dataset is created or updated.
  private readonly ajv = new Ajv({ allErrors: true, strict: false, code: { regExp: re2RegExp } });
  private readonly cache = new Map<string, ValidateFunction>();

  constructor() {
    addFormats(this.ajv);
    // ajv compiles the draft-07 meta-schema on first use (some 50 ms): at boot rather than in the first request.
    this.compile({});
  }

  /** Throws 422 when `schema` is not a usable JSON Schema. */
  checkSchema(schema: Record<string, unknown> | null | undefined, loc: (string | number)[]): void {
    if (schema == null) return;
    try {
      this.compile(schema);
    } catch (err) {
      throw new ValidationFailed([{ loc, msg: `Invalid JSON Schema: ${(err as Error).message}`, type: 'json_schema_invalid' }]);
    }
  }

  /** The errors of `value` against `schema` (empty when it conforms or when there is no schema). */
  errors(schema: Record<string, unknown> | null, value: unknown, loc: (string | number)[]): ValidationErrorItem[] {
    if (schema == null) return [];
    const validate = this.compile(schema);
    if (validate(value)) return [];
    return (validate.errors ?? []).map((e: ErrorObject) => ({
      loc: [...loc, ...e.instancePath.split('/').filter((s) => s !== '').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))],
      msg: `${e.instancePath === '' ? 'value' : e.instancePath} ${e.message ?? 'is invalid'}`.trim(),
      type: `json_schema_${e.keyword}`,
    }));
  }

  private compile(schema: Record<string, unknown>): ValidateFunction {
    const key = JSON.stringify(schema);
    let fn = this.cache.get(key);
    if (!fn) {
      fn = this.ajv.compile(schema);
      if (this.cache.size >= 1000) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(key, fn);
    }
    return fn;
  }
}
