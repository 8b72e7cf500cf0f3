import { ValidationFailed } from '@th/platform';
import { ExampleSchemaValidator } from './schema-validator';

describe('example schema validator', () => {
  const validator = new ExampleSchemaValidator();
  const evil = `${'a'.repeat(40)}!`;

  it('runs pattern and patternProperties in linear time, with JSON Schema semantics (unanchored search)', () => {
    const schema = { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' }, r: { type: 'string', pattern: 'b+c' } }, patternProperties: { '^(x+)+$': { type: 'number' } } };
    const t0 = performance.now();
    const errors = validator.errors(schema, { q: evil, r: 'abbbcd', [`${'x'.repeat(40)}!`]: 'not checked', xx: 'not a number' }, ['body', 'inputs']);
    expect(performance.now() - t0).toBeLessThan(2000); // backtracking: 2^40 steps
    expect(errors.map((e) => [e.loc, e.type])).toEqual([
      [['body', 'inputs', 'q'], 'json_schema_pattern'],
      [['body', 'inputs', 'xx'], 'json_schema_type'],
    ]);
    expect(validator.errors(schema, { q: 'aaa', r: 'bc' }, [])).toEqual([]);
  });

  it('keeps two patterns apart (ajv caches compiled patterns by their text)', () => {
    const schema = { type: 'object', properties: { a: { type: 'string', pattern: '^a$' }, b: { type: 'string', pattern: '^b$' } } };
    expect(validator.errors(schema, { a: 'a', b: 'b' }, [])).toEqual([]);
    expect(validator.errors(schema, { a: 'b', b: 'a' }, []).map((e) => e.loc)).toEqual([['a'], ['b']]);
  });

  it('refuses a schema whose pattern RE2 cannot run, with a 422 naming it', () => {
    for (const pattern of ['^(a+)\\1$', '(?=a)b', '(?<!a)b', '(?<n>a)\\k<n>']) {
      let caught: unknown;
      try {
        validator.checkSchema({ type: 'string', pattern }, ['body', 'inputs_schema_definition']);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ValidationFailed);
      const [item] = (caught as ValidationFailed).details ?? [];
      expect([item.loc, item.type]).toEqual([['body', 'inputs_schema_definition'], 'json_schema_invalid']);
      expect(item.msg).toMatch(/RE2|backreferences/);
    }
    expect(() => validator.checkSchema({ patternProperties: { '(?=x)': { type: 'number' } } }, ['body'])).toThrow(ValidationFailed);
    expect(() => validator.checkSchema({ type: 'string', pattern: '^[a-z]+\\d*$' }, ['body'])).not.toThrow();
  });
});
