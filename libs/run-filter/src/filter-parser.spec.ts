import { FilterSyntaxError } from './filter.errors';
import { MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, parseFilter, type FilterNode } from './filter-parser';

function parseError(expr: string): FilterSyntaxError {
  try {
    parseFilter(expr);
  } catch (e) {
    if (e instanceof FilterSyntaxError) return e;
    throw e;
  }
  throw new Error(`expected parseFilter(${JSON.stringify(expr)}) to throw`);
}

function stringValueOf(node: FilterNode): string {
  if (node.type !== 'comparison' || node.value.kind !== 'string') throw new Error('not a string comparison');
  return node.value.value;
}

function numberValueOf(expr: string): number {
  const node = parseFilter(`eq(total_tokens, ${expr})`);
  if (node.type !== 'comparison' || node.value.kind !== 'number') throw new Error('not a number comparison');
  return node.value.value;
}

describe('parseFilter', () => {
  describe('AST', () => {
    it('parses a comparison with positions', () => {
      expect(parseFilter('eq(name, "extractor")')).toEqual({
        type: 'comparison',
        comparator: 'eq',
        field: { name: 'name', written: 'name', position: 3 },
        value: { kind: 'string', value: 'extractor', position: 9 },
        position: 0,
      });
    });

    it('parses nested and/or/not', () => {
      expect(parseFilter('and(or(has(tags, "a"), has(tags, "b")), not(eq(is_root, true)), gt(latency, 2))')).toEqual({
        type: 'and',
        position: 0,
        operands: [
          {
            type: 'or',
            position: 4,
            operands: [
              {
                type: 'comparison',
                comparator: 'has',
                field: { name: 'tags', written: 'tags', position: 11 },
                value: { kind: 'string', value: 'a', position: 17 },
                position: 7,
              },
              {
                type: 'comparison',
                comparator: 'has',
                field: { name: 'tags', written: 'tags', position: 27 },
                value: { kind: 'string', value: 'b', position: 33 },
                position: 23,
              },
            ],
          },
          {
            type: 'not',
            position: 40,
            operand: {
              type: 'comparison',
              comparator: 'eq',
              field: { name: 'is_root', written: 'is_root', position: 47 },
              value: { kind: 'boolean', value: true, position: 56 },
              position: 44,
            },
          },
          {
            type: 'comparison',
            comparator: 'gt',
            field: { name: 'latency', written: 'latency', position: 67 },
            value: { kind: 'number', value: 2, position: 76 },
            position: 64,
          },
        ],
      });
    });

    it('parses the field-less search form', () => {
      expect(parseFilter('search("needle")')).toEqual({
        type: 'comparison',
        comparator: 'search',
        field: null,
        value: { kind: 'string', value: 'needle', position: 7 },
        position: 0,
      });
    });

    it('parses arrays for in, with all scalar kinds', () => {
      const node = parseFilter('in(run_type, ["llm", \'tool\', 1, -2.5, true, null])');
      expect(node).toEqual({
        type: 'comparison',
        comparator: 'in',
        field: { name: 'run_type', written: 'run_type', position: 3 },
        value: {
          kind: 'array',
          position: 13,
          items: [
            { kind: 'string', value: 'llm', position: 14 },
            { kind: 'string', value: 'tool', position: 21 },
            { kind: 'number', value: 1, position: 29 },
            { kind: 'number', value: -2.5, position: 32 },
            { kind: 'boolean', value: true, position: 38 },
            { kind: 'null', position: 44 },
          ],
        },
        position: 0,
      });
    });

    it('resolves field aliases and keeps the written name', () => {
      const tag = parseFilter('has(tag, "x")');
      const runId = parseFilter('eq(run_id, "00000000-0000-0000-0000-000000000001")');
      expect(tag.type === 'comparison' && tag.field).toEqual({ name: 'tags', written: 'tag', position: 4 });
      expect(runId.type === 'comparison' && runId.field).toEqual({ name: 'id', written: 'run_id', position: 3 });
    });

    it('accepts whitespace anywhere between tokens', () => {
      const compact = parseFilter('and(eq(name,"a"),not(has(tags,"b")))');
      const spaced = parseFilter(' \n and ( eq ( name ,\t"a" ) ,\r\n not ( has ( tags , "b" ) ) ) \n');
      const strip = (n: FilterNode): unknown => JSON.parse(JSON.stringify(n, (k, v: unknown) => (k === 'position' ? undefined : v)));
      expect(strip(spaced)).toEqual(strip(compact));
    });

    it('accepts a single operand in and/or', () => {
      expect(parseFilter('and(eq(name, "a"))')).toMatchObject({ type: 'and', operands: [{ type: 'comparison' }] });
      expect(parseFilter('or(eq(name, "a"))')).toMatchObject({ type: 'or', operands: [{ type: 'comparison' }] });
    });
  });

  describe('strings', () => {
    it.each([
      ['"plain"', 'plain'],
      ["'single'", 'single'],
      ['"it\'s"', "it's"],
      ["'say \"hi\"'", 'say "hi"'],
      ['"a\\"b"', 'a"b'],
      ["'a\\'b'", "a'b"],
      ['"back\\\\slash"', 'back\\slash'],
      ['"line\\nbreak\\ttab\\rcr"', 'line\nbreak\ttab\rcr'],
      ['"\\b\\f\\/"', '\b\f/'],
      ['"\\u00e9t\\u00C9"', 'étÉ'],
      ['"\\ud83d\\ude00"', '😀'],
      ['"raw\nnewline"', 'raw\nnewline'],
      ['""', ''],
      ['"unicode ✓ 日本"', 'unicode ✓ 日本'],
      ['") , eq(name"', ') , eq(name'],
    ])('%s -> %j', (literal, expected) => {
      expect(stringValueOf(parseFilter(`eq(name, ${literal})`))).toBe(expected);
    });
  });

  describe('numbers', () => {
    it.each([
      ['0', 0],
      ['42', 42],
      ['-7', -7],
      ['3.25', 3.25],
      ['-0.5', -0.5],
      ['.5', 0.5],
      ['1e3', 1000],
      ['2.5E-2', 0.025],
      ['-1e+2', -100],
    ])('%s -> %d', (literal, expected) => {
      expect(numberValueOf(literal)).toBe(expected);
    });

    it('parses booleans and null', () => {
      expect(parseFilter('eq(is_root, false)')).toMatchObject({ value: { kind: 'boolean', value: false } });
      expect(parseFilter('eq(parent_run_id, null)')).toMatchObject({ value: { kind: 'null' } });
    });
  });

  describe('errors', () => {
    it.each<[string, string, number]>([
      ['', 'expected an expression but found end of input', 0],
      ['   ', 'expected an expression but found end of input', 3],
      ['eq(name, "a") extra', "expected end of input but found 'extra'", 14],
      ['eq(name, "a"))', "expected end of input but found ')'", 13],
      ['"eq"', `expected an expression (e.g. eq(field, value)) but found '"'`, 0],
      ['and(eq(name, "a"), 42)', "expected an expression (e.g. eq(field, value)) but found '4'", 19],
      ['equals(name, "a")', 'unknown operator', 0],
      ['and(eq(name, "a"), contains(name, "b"))', "unknown operator 'contains'", 19],
      ['eq(nam, "a")', "unknown field 'nam'", 3],
      ['eq("name", "a")', `expected a field name as the first argument of 'eq' but found '"'`, 3],
      ['eq name, "a")', "expected '(' after 'eq' but found 'name'", 3],
      ['eq(name, "a"', "expected ')' to close 'eq(' but found end of input", 12],
      ['eq(name "a")', `expected ',' after the field name but found '"'`, 8],
      ['eq(name)', "'eq' expects 2 arguments (field, value), got 1", 7],
      ['eq()', "'eq' expects 2 arguments (field, value), got 0", 3],
      ['eq(name, "a", "b")', "'eq' expects 2 arguments (field, value), got more", 12],
      ['search()', "'search' expects 1 or 2 arguments ([field,] value), got 0", 7],
      ['search(name)', `'search' with a field expects a value: search(name, "text")`, 11],
      ['not()', "'not' expects exactly 1 argument", 4],
      ['not(eq(name, "a"), eq(name, "b"))', "'not' expects exactly 1 argument", 17],
      ['and()', "'and' expects at least 1 argument", 4],
      ['or()', "'or' expects at least 1 argument", 3],
      ['and(eq(name, "a") eq(name, "b"))', "expected ')' to close 'and(' but found 'eq'", 18],
      ['eq(name, llm)', "expected a value (quoted string, number, true, false, null or array) but found 'llm'; quote string values", 9],
      ['eq(name, )', "expected a value (quoted string, number, true, false, null or array) but found ')'", 9],
      ['eq(name, ["a"])', "an array value is only allowed with 'in', not 'eq'", 9],
      ['in(name, "a")', `'in' expects an array value like ["a", "b"]`, 9],
      ['in(name, [])', "'in' expects a non-empty array", 9],
      ['in(name, [["a"]])', 'nested arrays are not allowed', 10],
      ['in(name, ["a" "b"])', `expected ',' or ']' in array but found '"'`, 14],
      ['in(name, ["a",])', "expected a value (quoted string, number, true, false, null or array) but found ']'", 14],
      ['eq(name, "abc)', 'unterminated string literal', 9],
      ["eq(name, 'abc\")", 'unterminated string literal', 9],
      ['eq(name, "ab\\', 'unterminated string literal', 9],
      ['eq(name, "a\\qb")', "invalid escape sequence '\\q'", 11],
      ['eq(name, "\\u12")', 'invalid unicode escape; expected \\u followed by 4 hex digits', 10],
      ['eq(total_tokens, 5abc)', 'invalid number literal', 17],
      ['eq(total_tokens, 1.2.3)', 'invalid number literal', 17],
      ['eq(total_tokens, -)', "expected a number but found '-'", 17],
      ['eq(total_tokens, 1e999)', 'number literal is out of range', 17],
      ['eq(name, "a") eq', "expected end of input but found 'eq'", 14],
      ['EQ(name, "a")', "unknown operator 'EQ'", 0],
    ])('%j -> %s at %d', (expr, detail, position) => {
      const err = parseError(expr);
      expect(err).toBeInstanceOf(FilterSyntaxError);
      expect(err.detail.startsWith(detail)).toBe(true);
      expect(err.position).toBe(position);
      expect(err.message).toBe(`${err.detail} at position ${position}`);
    });

    it('lists the valid choices for unknown operators and fields', () => {
      expect(parseError('equals(name, "a")').detail).toBe(
        "unknown operator 'equals'; expected one of and, or, not, eq, neq, gt, gte, lt, lte, has, search, in, like, ilike",
      );
      expect(parseError('eq(nam, "a")').detail).toContain('expected one of id, trace_id, session_id');
      expect(parseError('eq(nam, "a")').detail).toContain('run_id, tag');
    });

    it('is a real Error subclass', () => {
      const err = parseError('eq(');
      expect(err).toBeInstanceOf(Error);
      expect(err.name).toBe('FilterSyntaxError');
    });

    it('rejects a non-string input', () => {
      const err = parseError(42 as unknown as string);
      expect(err.detail).toBe('filter must be a string');
      expect(err.position).toBe(0);
    });
  });

  describe('bounds', () => {
    const wrap = (depth: number): string => 'not('.repeat(depth - 1) + 'eq(name, "a")' + ')'.repeat(depth - 1);

    it(`accepts nesting depth ${MAX_FILTER_DEPTH}`, () => {
      let node = parseFilter(wrap(MAX_FILTER_DEPTH));
      let depth = 1;
      while (node.type === 'not') {
        node = node.operand;
        depth++;
      }
      expect(depth).toBe(MAX_FILTER_DEPTH);
      expect(node.type).toBe('comparison');
    });

    it(`rejects nesting depth ${MAX_FILTER_DEPTH + 1} at the offending call`, () => {
      const err = parseError(wrap(MAX_FILTER_DEPTH + 1));
      expect(err.detail).toBe(`filter exceeds the maximum nesting depth of ${MAX_FILTER_DEPTH}`);
      expect(err.position).toBe(4 * MAX_FILTER_DEPTH);
    });

    it('counts and/or nesting the same way', () => {
      const deep = 'and('.repeat(40) + 'eq(name, "a")' + ')'.repeat(40);
      const err = parseError(deep);
      expect(err.detail).toBe(`filter exceeds the maximum nesting depth of ${MAX_FILTER_DEPTH}`);
      expect(err.position).toBe(4 * MAX_FILTER_DEPTH);
    });

    it(`accepts exactly ${MAX_FILTER_LENGTH} characters and rejects one more`, () => {
      const prefix = 'eq(name, "';
      const suffix = '")';
      const fill = (n: number): string => prefix + 'x'.repeat(n - prefix.length - suffix.length) + suffix;
      expect(stringValueOf(parseFilter(fill(MAX_FILTER_LENGTH))).length).toBe(MAX_FILTER_LENGTH - 12);
      const err = parseError(fill(MAX_FILTER_LENGTH + 1));
      expect(err.detail).toBe(`filter exceeds the maximum length of ${MAX_FILTER_LENGTH} characters`);
      expect(err.position).toBe(MAX_FILTER_LENGTH);
    });
  });
});
