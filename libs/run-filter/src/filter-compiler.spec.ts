import { FilterSyntaxError } from './filter.errors';
import { compileFilter, compileFilterAst, type CompiledFilter } from './filter-compiler';
import { parseFilter } from './filter-parser';

const OPTS = { paramPrefix: 'p', tenantParam: 'tenant' };
/** The SQL and parameters (usesFeedback is checked on its own below). */
const c = (expr: string): Pick<CompiledFilter, 'sql' | 'params'> => {
  const { sql, params } = compileFilter(expr, OPTS);
  return { sql, params };
};
const LAT = "dateDiff('microsecond', start_time, end_time) / 1e6";
const FB = (conds: string): string =>
  `id IN (SELECT run_id FROM feedback FINAL WHERE tenant_id = {tenant:UUID} AND ${conds} AND is_deleted = 0)`;
const U1 = '00000000-0000-0000-0000-000000000001';
const U2 = 'ABCDEF00-0000-4000-8000-00000000000F';

function compileError(expr: string): FilterSyntaxError {
  try {
    c(expr);
  } catch (e) {
    if (e instanceof FilterSyntaxError) return e;
    throw e;
  }
  throw new Error(`expected compileFilter(${JSON.stringify(expr)}) to throw`);
}

describe('compileFilter', () => {
  describe('plain columns, every comparator', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['eq(name, "extractor")', 'name = {p0:String}', { p0: 'extractor' }],
      ['neq(run_type, "llm")', 'run_type != {p0:String}', { p0: 'llm' }],
      ['gt(dotted_order, "2026")', 'dotted_order > {p0:String}', { p0: '2026' }],
      ['gte(total_tokens, 100)', 'total_tokens >= {p0:Float64}', { p0: 100 }],
      ['lt(prompt_tokens, 1.5e3)', 'prompt_tokens < {p0:Float64}', { p0: 1500 }],
      ['lte(completion_tokens, -1)', 'completion_tokens <= {p0:Float64}', { p0: -1 }],
      ['in(status, ["success", "error"])', 'status IN {p0:Array(String)}', { p0: ['success', 'error'] }],
      ['in(total_tokens, [1, 2.5])', 'total_tokens IN {p0:Array(Float64)}', { p0: [1, 2.5] }],
      ['search(name, "Chat")', 'positionCaseInsensitiveUTF8(name, {p0:String}) > 0', { p0: 'Chat' }],
      ['like(name, "Chat%")', 'name LIKE {p0:String}', { p0: 'Chat%' }],
      ['ilike(trace_tier, "long%")', 'trace_tier ILIKE {p0:String}', { p0: 'long%' }],
      ['eq(is_root, true)', 'is_root = {p0:Bool}', { p0: true }],
      ['neq(is_root, false)', 'is_root != {p0:Bool}', { p0: false }],
      [`eq(id, "${U2}")`, 'id = {p0:UUID}', { p0: U2.toLowerCase() }],
      [`eq(run_id, "${U1}")`, 'id = {p0:UUID}', { p0: U1 }],
      [`neq(trace_id, "${U1}")`, 'trace_id != {p0:UUID}', { p0: U1 }],
      [`in(session_id, ["${U1}", "${U2}"])`, 'session_id IN {p0:Array(UUID)}', { p0: [U1, U2.toLowerCase()] }],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });
  });

  describe('nullable columns: NULL never leaks, neq is the complement of eq', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['gt(total_cost, 0.5)', 'ifNull(total_cost > {p0:Float64}, 0)', { p0: 0.5 }],
      ['neq(prompt_cost, 1)', 'ifNull(prompt_cost != {p0:Float64}, 1)', { p0: 1 }],
      ['in(completion_cost, [1])', 'ifNull(completion_cost IN {p0:Array(Float64)}, 0)', { p0: [1] }],
      [`eq(parent_run_id, "${U1}")`, 'ifNull(parent_run_id = {p0:UUID}, 0)', { p0: U1 }],
      ['eq(parent_run_id, null)', 'parent_run_id IS NULL', {}],
      ['neq(reference_example_id, null)', 'reference_example_id IS NOT NULL', {}],
      ['eq(end_time, null)', 'end_time IS NULL', {}],
      ['neq(total_cost, null)', 'total_cost IS NOT NULL', {}],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });
  });

  describe('timestamps', () => {
    it.each<[string, string, string]>([
      ['gt(start_time, "2026-01-01T00:00:00Z")', "start_time > parseDateTime64BestEffort({p0:String}, 6, 'UTC')", '2026-01-01T00:00:00Z'],
      ['lte(start_time, "2026-01-01")', "start_time <= parseDateTime64BestEffort({p0:String}, 6, 'UTC')", '2026-01-01'],
      ['eq(start_time, "2026-01-01 10:20:30.123456")', "start_time = parseDateTime64BestEffort({p0:String}, 6, 'UTC')", '2026-01-01 10:20:30.123456'],
      [
        'lt(end_time, "2026-01-01T10:20:30+02:00")',
        "ifNull(end_time < parseDateTime64BestEffort({p0:String}, 6, 'UTC'), 0)",
        '2026-01-01T10:20:30+02:00',
      ],
      [
        'gte(first_token_time, "2026-03-04T05:06:07.5-0130")',
        "ifNull(first_token_time >= parseDateTime64BestEffort({p0:String}, 6, 'UTC'), 0)",
        '2026-03-04T05:06:07.5-0130',
      ],
    ])('%s', (expr, sql, value) => {
      expect(c(expr)).toEqual({ sql, params: { p0: value } });
    });
  });

  describe('latency', () => {
    it.each<[string, string, number]>([
      ['gt(latency, 10)', `ifNull(${LAT} > {p0:Float64}, 0)`, 10],
      ['lt(latency, "500ms")', `ifNull(${LAT} < {p0:Float64}, 0)`, 0.5],
      ['gte(latency, "2.5s")', `ifNull(${LAT} >= {p0:Float64}, 0)`, 2.5],
      ['lte(latency, "2m")', `ifNull(${LAT} <= {p0:Float64}, 0)`, 120],
      ['neq(latency, "3")', `ifNull(${LAT} != {p0:Float64}, 1)`, 3],
    ])('%s', (expr, sql, value) => {
      expect(c(expr)).toEqual({ sql, params: { p0: value } });
    });

    it('compares missing latency with null', () => {
      expect(c('eq(latency, null)')).toEqual({ sql: `${LAT} IS NULL`, params: {} });
    });
  });

  describe('error', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['eq(error, true)', 'error IS NOT NULL', {}],
      ['eq(error, false)', 'error IS NULL', {}],
      ['neq(error, true)', 'error IS NULL', {}],
      ['neq(error, false)', 'error IS NOT NULL', {}],
      ['neq(error, null)', 'error IS NOT NULL', {}],
      ['eq(error, null)', 'error IS NULL', {}],
      ['eq(error, "boom")', 'ifNull(error = {p0:String}, 0)', { p0: 'boom' }],
      ['neq(error, "boom")', 'ifNull(error != {p0:String}, 1)', { p0: 'boom' }],
      ['in(error, ["a", "b"])', 'ifNull(error IN {p0:Array(String)}, 0)', { p0: ['a', 'b'] }],
      ['search(error, "timeout")', 'ifNull(positionCaseInsensitiveUTF8(error, {p0:String}) > 0, 0)', { p0: 'timeout' }],
      ['like(error, "%Timeout%")', 'ifNull(error LIKE {p0:String}, 0)', { p0: '%Timeout%' }],
      ['ilike(error, "%timeout%")', 'ifNull(error ILIKE {p0:String}, 0)', { p0: '%timeout%' }],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });
  });

  describe('tags (and the tag alias)', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['has(tags, "prod")', 'has(tags, {p0:String})', { p0: 'prod' }],
      ['eq(tag, "prod")', 'has(tags, {p0:String})', { p0: 'prod' }],
      ['neq(tags, "prod")', 'NOT (has(tags, {p0:String}))', { p0: 'prod' }],
      ['in(tag, ["a", "b"])', 'hasAny(tags, {p0:Array(String)})', { p0: ['a', 'b'] }],
      ['search(tags, "PRO")', 'arrayExists(t -> positionCaseInsensitiveUTF8(t, {p0:String}) > 0, tags)', { p0: 'PRO' }],
      ['like(tags, "v1.%")', 'arrayExists(t -> t LIKE {p0:String}, tags)', { p0: 'v1.%' }],
      ['ilike(tags, "V1.%")', 'arrayExists(t -> t ILIKE {p0:String}, tags)', { p0: 'V1.%' }],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });
  });

  describe('search without a field', () => {
    it('searches name, inputs, outputs and error with one parameter', () => {
      expect(c('search("Paris")')).toEqual({
        sql:
          '(positionCaseInsensitiveUTF8(name, {p0:String}) > 0 OR positionCaseInsensitiveUTF8(inputs, {p0:String}) > 0 ' +
          'OR positionCaseInsensitiveUTF8(outputs, {p0:String}) > 0 OR ifNull(positionCaseInsensitiveUTF8(error, {p0:String}) > 0, 0))',
        params: { p0: 'Paris' },
      });
    });
  });

  describe('metadata', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['has(metadata, "conversation_id")', 'mapContains(metadata, {p0:String})', { p0: 'conversation_id' }],
      [
        `has(metadata, '{"conversation_id": "c1", "n": 2, "ok": true}')`,
        '(mapContains(metadata, {p0:String}) AND metadata[{p0:String}] = {p1:String} AND mapContains(metadata, {p2:String}) ' +
          'AND metadata[{p2:String}] = {p3:String} AND mapContains(metadata, {p4:String}) AND metadata[{p4:String}] = {p5:String})',
        { p0: 'conversation_id', p1: 'c1', p2: 'n', p3: '2', p4: 'ok', p5: 'true' },
      ],
      ['search(metadata, "gpt")', 'arrayExists(v -> positionCaseInsensitiveUTF8(v, {p0:String}) > 0, mapValues(metadata))', { p0: 'gpt' }],
      // lone key
      ['eq(metadata_key, "k")', 'mapContains(metadata, {p0:String})', { p0: 'k' }],
      ['neq(metadata_key, "k")', 'NOT (mapContains(metadata, {p0:String}))', { p0: 'k' }],
      ['in(metadata_key, ["a", "b"])', 'hasAny(mapKeys(metadata), {p0:Array(String)})', { p0: ['a', 'b'] }],
      ['search(metadata_key, "sess")', 'arrayExists(k -> positionCaseInsensitiveUTF8(k, {p0:String}) > 0, mapKeys(metadata))', { p0: 'sess' }],
      ['like(metadata_key, "ls_%")', 'arrayExists(k -> k LIKE {p0:String}, mapKeys(metadata))', { p0: 'ls_%' }],
      // lone value
      ['eq(metadata_value, "v")', 'has(mapValues(metadata), {p0:String})', { p0: 'v' }],
      ['eq(metadata_value, true)', 'has(mapValues(metadata), {p0:String})', { p0: 'true' }],
      ['neq(metadata_value, "v")', 'NOT (has(mapValues(metadata), {p0:String}))', { p0: 'v' }],
      ['in(metadata_value, ["x", "y"])', 'hasAny(mapValues(metadata), {p0:Array(String)})', { p0: ['x', 'y'] }],
      ['gt(metadata_value, 5)', 'arrayExists(v -> ifNull(toFloat64OrNull(v) > {p0:Float64}, 0), mapValues(metadata))', { p0: 5 }],
      ['search(metadata_value, "abc")', 'arrayExists(v -> positionCaseInsensitiveUTF8(v, {p0:String}) > 0, mapValues(metadata))', { p0: 'abc' }],
      // pairs
      [
        'and(eq(metadata_key, "conversation_id"), eq(metadata_value, "c1"))',
        '(mapContains(metadata, {p0:String}) AND metadata[{p0:String}] = {p1:String})',
        { p0: 'conversation_id', p1: 'c1' },
      ],
      [
        'and(eq(metadata_value, "c1"), eq(metadata_key, "conversation_id"))',
        '(mapContains(metadata, {p0:String}) AND metadata[{p0:String}] = {p1:String})',
        { p0: 'conversation_id', p1: 'c1' },
      ],
      [
        'and(eq(metadata_key, "temperature"), lt(metadata_value, 0.5))',
        '(mapContains(metadata, {p0:String}) AND ifNull(toFloat64OrNull(metadata[{p0:String}]) < {p1:Float64}, 0))',
        { p0: 'temperature', p1: 0.5 },
      ],
      [
        'and(eq(metadata_key, "env"), neq(metadata_value, "prod"))',
        '(mapContains(metadata, {p0:String}) AND metadata[{p0:String}] != {p1:String})',
        { p0: 'env', p1: 'prod' },
      ],
      [
        'and(eq(metadata_key, "env"), in(metadata_value, ["a", "b"]))',
        '(mapContains(metadata, {p0:String}) AND metadata[{p0:String}] IN {p1:Array(String)})',
        { p0: 'env', p1: ['a', 'b'] },
      ],
      [
        'and(in(metadata_key, ["session_id", "conversation_id", "thread_id"]), eq(metadata_value, "abc"))',
        '((mapContains(metadata, {p0:String}) AND metadata[{p0:String}] = {p3:String}) OR ' +
          '(mapContains(metadata, {p1:String}) AND metadata[{p1:String}] = {p3:String}) OR ' +
          '(mapContains(metadata, {p2:String}) AND metadata[{p2:String}] = {p3:String}))',
        { p0: 'session_id', p1: 'conversation_id', p2: 'thread_id', p3: 'abc' },
      ],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });

    it('pairs keys and values in order and leaves extra ones alone', () => {
      expect(
        c('and(eq(name, "ChatOpenAI"), eq(metadata_key, "a"), eq(metadata_value, "1"), eq(metadata_key, "b"), eq(metadata_value, "2"), eq(metadata_key, "c"))'),
      ).toEqual({
        sql:
          '(name = {p0:String} AND (mapContains(metadata, {p1:String}) AND metadata[{p1:String}] = {p2:String}) AND ' +
          '(mapContains(metadata, {p3:String}) AND metadata[{p3:String}] = {p4:String}) AND mapContains(metadata, {p5:String}))',
        params: { p0: 'ChatOpenAI', p1: 'a', p2: '1', p3: 'b', p4: '2', p5: 'c' },
      });
    });

    it('does not pair across or, and a neq key stays a lone condition', () => {
      expect(c('or(eq(metadata_key, "k"), eq(metadata_value, "v"))')).toEqual({
        sql: '(mapContains(metadata, {p0:String}) OR has(mapValues(metadata), {p1:String}))',
        params: { p0: 'k', p1: 'v' },
      });
      expect(c('and(neq(metadata_key, "k"), eq(metadata_value, "v"))')).toEqual({
        sql: '(NOT (mapContains(metadata, {p0:String})) AND has(mapValues(metadata), {p1:String}))',
        params: { p0: 'k', p1: 'v' },
      });
    });
  });

  describe('inputs / outputs', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['has(inputs, "question")', 'JSONHas(inputs, {p0:String})', { p0: 'question' }],
      ['has(outputs, "a.b")', 'JSONHas(outputs, {p0:String}, {p1:String})', { p0: 'a', p1: 'b' }],
      ['search(inputs, "paris")', 'positionCaseInsensitiveUTF8(inputs, {p0:String}) > 0', { p0: 'paris' }],
      ['like(outputs, "%\\"answer\\"%")', 'outputs LIKE {p0:String}', { p0: '%"answer"%' }],
      ['ilike(inputs, "%Q%")', 'inputs ILIKE {p0:String}', { p0: '%Q%' }],
      ['eq(input_key, "question")', 'JSONHas(inputs, {p0:String})', { p0: 'question' }],
      ['eq(output_key, "a.b.c")', 'JSONHas(outputs, {p0:String}, {p1:String}, {p2:String})', { p0: 'a', p1: 'b', p2: 'c' }],
      ['neq(input_key, "q")', 'NOT (JSONHas(inputs, {p0:String}))', { p0: 'q' }],
      ['in(input_key, ["a", "b.c"])', '(JSONHas(inputs, {p0:String}) OR JSONHas(inputs, {p1:String}, {p2:String}))', { p0: 'a', p1: 'b', p2: 'c' }],
      ['search(output_key, "ans")', 'arrayExists(k -> positionCaseInsensitiveUTF8(k, {p0:String}) > 0, JSONExtractKeys(outputs))', { p0: 'ans' }],
      ['eq(output_value, "Paris")', 'arrayExists(kv -> JSONExtractString(kv.2) = {p0:String}, JSONExtractKeysAndValuesRaw(outputs))', { p0: 'Paris' }],
      [
        'gte(input_value, 3)',
        "arrayExists(kv -> ifNull(JSONExtract(kv.2, 'Nullable(Float64)') >= {p0:Float64}, 0), JSONExtractKeysAndValuesRaw(inputs))",
        { p0: 3 },
      ],
      [
        'eq(input_value, true)',
        "arrayExists(kv -> ifNull(JSONExtract(kv.2, 'Nullable(Bool)') = {p0:Bool}, 0), JSONExtractKeysAndValuesRaw(inputs))",
        { p0: true },
      ],
      [
        'neq(output_value, "x")',
        'NOT (arrayExists(kv -> JSONExtractString(kv.2) = {p0:String}, JSONExtractKeysAndValuesRaw(outputs)))',
        { p0: 'x' },
      ],
      [
        'and(eq(input_key, "question"), search(input_value, "capital"))',
        '(JSONHas(inputs, {p0:String}) AND positionCaseInsensitiveUTF8(JSONExtractString(inputs, {p0:String}), {p1:String}) > 0)',
        { p0: 'question', p1: 'capital' },
      ],
      [
        'and(eq(input_key, "a.b"), gt(input_value, 3))',
        "(JSONHas(inputs, {p0:String}, {p1:String}) AND ifNull(JSONExtract(inputs, {p0:String}, {p1:String}, 'Nullable(Float64)') > {p2:Float64}, 0))",
        { p0: 'a', p1: 'b', p2: 3 },
      ],
      [
        'and(eq(output_key, "ok"), eq(output_value, false))',
        "(JSONHas(outputs, {p0:String}) AND ifNull(JSONExtract(outputs, {p0:String}, 'Nullable(Bool)') = {p1:Bool}, 0))",
        { p0: 'ok', p1: false },
      ],
      [
        'and(in(output_key, ["a", "b"]), eq(output_value, "x"))',
        '((JSONHas(outputs, {p0:String}) AND JSONExtractString(outputs, {p0:String}) = {p2:String}) OR ' +
          '(JSONHas(outputs, {p1:String}) AND JSONExtractString(outputs, {p1:String}) = {p2:String}))',
        { p0: 'a', p1: 'b', p2: 'x' },
      ],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });

    it('keeps the metadata, input and output families apart', () => {
      expect(c('and(eq(input_key, "q"), eq(output_value, "v"))')).toEqual({
        sql:
          '(JSONHas(inputs, {p0:String}) AND arrayExists(kv -> JSONExtractString(kv.2) = {p1:String}, JSONExtractKeysAndValuesRaw(outputs)))',
        params: { p0: 'q', p1: 'v' },
      });
    });
  });

  describe('feedback', () => {
    it.each<[string, string, CompiledFilter['params']]>([
      ['eq(feedback_key, "correctness")', FB('key = {p0:String}'), { p0: 'correctness' }],
      ['gt(feedback_score, 0.5)', FB('score > {p0:Float64}'), { p0: 0.5 }],
      ['eq(feedback_score, true)', FB('score = {p0:Float64}'), { p0: 1 }],
      ['eq(feedback_score, null)', FB('score IS NULL'), {}],
      ['search(feedback_value, "good")', FB('positionCaseInsensitiveUTF8(value, {p0:String}) > 0'), { p0: 'good' }],
      ['in(feedback_key, ["a", "b"])', FB('key IN {p0:Array(String)}'), { p0: ['a', 'b'] }],
      ['neq(feedback_key, "correctness")', `NOT (${FB('key = {p0:String}')})`, { p0: 'correctness' }],
      [
        'and(eq(feedback_key, "user_score"), eq(feedback_score, 1))',
        FB('key = {p0:String} AND score = {p1:Float64}'),
        { p0: 'user_score', p1: 1 },
      ],
      [
        'and(gt(feedback_score, 0.5), eq(feedback_key, "correctness"))',
        FB('key = {p0:String} AND score > {p1:Float64}'),
        { p0: 'correctness', p1: 0.5 },
      ],
      [
        'and(eq(feedback_key, "k"), neq(feedback_score, 0), like(feedback_value, "ok%"))',
        FB('key = {p0:String} AND score != {p1:Float64} AND value LIKE {p2:String}'),
        { p0: 'k', p1: 0, p2: 'ok%' },
      ],
    ])('%s', (expr, sql, params) => {
      expect(c(expr)).toEqual({ sql, params });
    });

    it('groups several key/score pairs in order, each on its own feedback row', () => {
      expect(
        c('and(eq(feedback_key, "a"), gt(feedback_score, 0.5), eq(name, "x"), eq(feedback_key, "b"), lt(feedback_score, 0.2))'),
      ).toEqual({
        sql: `(${FB('key = {p0:String} AND score > {p1:Float64}')} AND name = {p2:String} AND ${FB('key = {p3:String} AND score < {p4:Float64}')})`,
        params: { p0: 'a', p1: 0.5, p2: 'x', p3: 'b', p4: 0.2 },
      });
    });

    it('two keys without scores are two independent conditions', () => {
      expect(c('and(eq(feedback_key, "a"), eq(feedback_key, "b"))')).toEqual({
        sql: `(${FB('key = {p0:String}')} AND ${FB('key = {p1:String}')})`,
        params: { p0: 'a', p1: 'b' },
      });
    });

    it('uses the configured tenant parameter and does not bind it', () => {
      const r = compileFilter('eq(feedback_key, "k")', { paramPrefix: 'flt_', tenantParam: 'tid' });
      expect(r).toEqual({
        sql: 'id IN (SELECT run_id FROM feedback FINAL WHERE tenant_id = {tid:UUID} AND key = {flt_0:String} AND is_deleted = 0)',
        params: { flt_0: 'k' },
        usesFeedback: true,
      });
    });

    it('bounds every feedback condition by modified_at when asked, binding the bounds as parameters', () => {
      const feedbackModifiedAt = { min: '2026-11-01T00:00:00Z', max: '2026-11-02T00:00:00Z' };
      const r = compileFilter('or(eq(feedback_key, "k"), eq(name, "n"))', { paramPrefix: 'p', tenantParam: 'tid', feedbackModifiedAt });
      expect(r).toEqual({
        sql:
          "(id IN (SELECT run_id FROM feedback FINAL WHERE tenant_id = {tid:UUID} AND key = {p0:String} AND modified_at >= parseDateTime64BestEffort({p1:String}, 6, 'UTC') " +
          "AND modified_at < parseDateTime64BestEffort({p2:String}, 6, 'UTC') AND is_deleted = 0) OR name = {p3:String})",
        params: { p0: 'k', p1: feedbackModifiedAt.min, p2: feedbackModifiedAt.max, p3: 'n' },
        usesFeedback: true,
      });
      // Without a feedback condition the bounds have nothing to apply to, and the caller is told so.
      expect(compileFilter('eq(name, "n")', { paramPrefix: 'p', tenantParam: 'tid', feedbackModifiedAt })).toEqual({ sql: 'name = {p0:String}', params: { p0: 'n' }, usesFeedback: false });
    });
  });

  describe('logic', () => {
    it('compiles the LangSmith documentation examples', () => {
      expect(c('and(eq(run_type, "chain"), gt(latency, 10), gt(total_tokens, 5000))')).toEqual({
        sql: `(run_type = {p0:String} AND ifNull(${LAT} > {p1:Float64}, 0) AND total_tokens > {p2:Float64})`,
        params: { p0: 'chain', p1: 10, p2: 5000 },
      });
      expect(
        c('and(gt(start_time, "2023-07-15T12:34:56Z"), or(neq(error, null), and(eq(feedback_key, "Correctness"), eq(feedback_score, 0.0))))'),
      ).toEqual({
        sql:
          "(start_time > parseDateTime64BestEffort({p0:String}, 6, 'UTC') AND (error IS NOT NULL OR " +
          `${FB('key = {p1:String} AND score = {p2:Float64}')}))`,
        params: { p0: '2023-07-15T12:34:56Z', p1: 'Correctness', p2: 0 },
      });
      expect(c('and(or(has(tags, "experimental"), has(tags, "beta")), gt(latency, 2))')).toEqual({
        sql: `((has(tags, {p0:String}) OR has(tags, {p1:String})) AND ifNull(${LAT} > {p2:Float64}, 0))`,
        params: { p0: 'experimental', p1: 'beta', p2: 2 },
      });
    });

    it('nests and/or/not with explicit parentheses', () => {
      expect(c('or(not(and(eq(name, "a"), not(eq(status, "error")))), and(lt(total_tokens, 5), or(eq(is_root, true))))')).toEqual({
        sql: '(NOT ((name = {p0:String} AND NOT (status = {p1:String}))) OR (total_tokens < {p2:Float64} AND is_root = {p3:Bool}))',
        params: { p0: 'a', p1: 'error', p2: 5, p3: true },
      });
    });

    it('a single-operand and/or is just the operand', () => {
      expect(c('and(eq(name, "a"))')).toEqual({ sql: 'name = {p0:String}', params: { p0: 'a' } });
      expect(c('or(eq(name, "a"))')).toEqual({ sql: 'name = {p0:String}', params: { p0: 'a' } });
    });

    it('numbers parameters in order of appearance across the whole tree', () => {
      const r = c('and(eq(name, "a"), or(eq(name, "b"), not(eq(name, "c"))), eq(name, "d"))');
      expect(r.params).toEqual({ p0: 'a', p1: 'b', p2: 'c', p3: 'd' });
    });
  });

  describe('values never reach the SQL text', () => {
    it.each([
      `eq(name, "x' OR 1=1 --")`,
      `eq(name, "{p1:String}")`,
      `search("'); DROP TABLE runs; --")`,
      `eq(metadata_key, "a'] OR 1 --")`,
      `and(eq(input_key, "a'.b\\\\"), eq(input_value, "\\" OR 1"))`,
      `has(metadata, '{"k\\'": "v\\u0027)"}')`,
      `eq(feedback_key, "x) OR (1")`,
      `like(name, "%'%")`,
    ])('%s', (expr) => {
      const { sql, params } = c(expr);
      expect(sql).not.toMatch(/'(?!UTC'|microsecond'|Nullable\((?:Float64|Bool)\)')/);
      expect(sql).not.toMatch(/--|DROP|OR 1/);
      const values = Object.values(params).flat().map(String);
      expect(values.length).toBeGreaterThan(0);
      for (const v of values) {
        if (v.length > 2) expect(sql).not.toContain(v);
      }
    });
  });

  describe('type and comparator errors carry the position of the offending token', () => {
    it.each<[string, string, number]>([
      ['gt(tags, "a")', "comparator 'gt' is not supported for field 'tags'; supported: has, eq, neq, in, search, like, ilike", 0],
      ['and(eq(name, "a"), has(name, "b"))', "comparator 'has' is not supported for field 'name'", 19],
      ['search(start_time, "2026")', "comparator 'search' is not supported for field 'start_time'", 0],
      ['in(start_time, ["2026-01-01"])', "comparator 'in' is not supported for field 'start_time'", 0],
      ['gt(is_root, true)', "comparator 'gt' is not supported for field 'is_root'", 0],
      ['eq(metadata, "x")', "comparator 'eq' is not supported for field 'metadata'", 0],
      ['eq(inputs, "x")', "comparator 'eq' is not supported for field 'inputs'", 0],
      ['has(feedback_key, "x")', "comparator 'has' is not supported for field 'feedback_key'", 0],
      ['gt(id, "x")', "comparator 'gt' is not supported for field 'id'", 0],
      ['eq(total_tokens, "100")', "field 'total_tokens' expects a number, found a string", 17],
      ['eq(name, 5)', "field 'name' expects a string, found a number", 9],
      ['eq(name, true)', "field 'name' expects a string, found a boolean", 9],
      ['eq(is_root, "true")', "field 'is_root' expects true or false, found a string", 12],
      ['eq(id, "not-a-uuid")', "field 'id' expects a UUID, found 'not-a-uuid'", 7],
      ['eq(trace_id, 5)', "field 'trace_id' expects a UUID string, found a number", 13],
      [`in(id, ["${U1}", "nope"])`, "field 'id' expects a UUID, found 'nope'", 48],
      ['gt(start_time, "yesterday")', "field 'start_time' expects an ISO-8601 timestamp, found 'yesterday'", 15],
      ['gt(start_time, "2026-13-01")', "field 'start_time' expects an ISO-8601 timestamp, found '2026-13-01'", 15],
      ['gt(start_time, 1700000000)', "field 'start_time' expects an ISO-8601 timestamp string, found a number", 15],
      ['gt(latency, "fast")', 'invalid duration \'fast\'; use seconds or e.g. "500ms", "5s", "2m"', 12],
      ['gt(latency, true)', `field 'latency' expects a number of seconds or a duration string like "5s", found a boolean`, 12],
      ['in(name, ["a", 1])', "field 'name' expects a string, found a number", 15],
      ['in(name, ["a", null])', "field 'name' expects a string, found null", 15],
      ['eq(name, null)', "field 'name' is never null", 9],
      ['eq(start_time, null)', "field 'start_time' is never null", 15],
      ['gt(total_cost, null)', 'null can only be compared with eq or neq', 15],
      ['has(tags, 1)', "field 'tags' expects a string, found a number", 10],
      ['has(tag, null)', "field 'tag' expects a string, found null", 9],
      ['search(5)', 'search expects a string value, found a number', 7],
      ['search(true)', 'search expects a string value, found a boolean', 7],
      ['search(tags, 5)', "field 'tags' expects a string, found a number", 13],
      ['has(metadata, 5)', "'has(metadata, ...)' expects a string value, found a number", 14],
      [`has(metadata, '{"a": ')`, 'has(metadata, ...) expects a key or a JSON object, found invalid JSON', 14],
      [`has(metadata, '{}')`, 'has(metadata, ...) expects a non-empty JSON object', 14],
      ['has(inputs, "a..b")', "invalid key path 'a..b'", 12],
      ['eq(input_key, ".a")', "invalid key path '.a'", 14],
      ['eq(metadata_key, 5)', "field 'metadata_key' expects a string key, found a number", 17],
      ['in(metadata_key, ["a", 5])', "field 'metadata_key' expects a string key, found a number", 23],
      ['eq(metadata_value, null)', "field 'metadata_value' cannot be compared with null", 19],
      ['search(metadata_value, 5)', "comparator 'search' expects a string value, found a number", 23],
      ['gt(input_value, true)', "comparator 'gt' is not supported for boolean values", 0],
      ['and(eq(metadata_key, "k"), eq(metadata_value, null))', "field 'metadata_value' cannot be compared with null", 46],
      ['and(eq(input_key, "k"), in(input_value, ["a", 1]))', "field 'input_value' expects a string, found a number", 46],
      ['eq(feedback_score, "high")', "field 'feedback_score' expects a number, found a string", 19],
      ['eq(feedback_value, 1)', "field 'feedback_value' expects a string, found a number", 19],
      ['and(eq(feedback_key, "k"), gt(feedback_score, "x"))', "field 'feedback_score' expects a number, found a string", 46],
      ['and(eq(feedback_key, "k"), has(feedback_score, 1))', "comparator 'has' is not supported for field 'feedback_score'", 27],
      ['eq(feedback_key, null)', "field 'feedback_key' is never null", 17],
    ])('%s -> %s at %d', (expr, detail, position) => {
      const err = compileError(expr);
      expect(err.detail.startsWith(detail)).toBe(true);
      expect(err.position).toBe(position);
    });

    it('propagates parser errors unchanged', () => {
      const err = compileError('and(eq(name, "a"),');
      expect(err.detail).toBe('expected an expression (e.g. eq(field, value)) but found end of input');
      expect(err.position).toBe(18);
    });
  });

  describe('options', () => {
    it('rejects parameter names that are not identifiers (they are spliced into SQL)', () => {
      expect(() => compileFilter('eq(name, "a")', { paramPrefix: 'p}', tenantParam: 'tenant' })).toThrow(TypeError);
      expect(() => compileFilter('eq(name, "a")', { paramPrefix: 'p', tenantParam: 'tenant:UUID}' })).toThrow(TypeError);
      expect(() => compileFilter('eq(name, "a")', { paramPrefix: '', tenantParam: 'tenant' })).toThrow(TypeError);
    });

    it('rejects a tenant parameter that a generated name could shadow', () => {
      expect(() => compileFilter('eq(name, "a")', { paramPrefix: 'p', tenantParam: 'p3' })).toThrow(TypeError);
      expect(compileFilter('eq(name, "a")', { paramPrefix: 'p', tenantParam: 'p_tenant' }).sql).toBe('name = {p0:String}');
    });

    it('compileFilterAst compiles a parsed tree (for trace_filter/tree_filter reuse)', () => {
      expect(compileFilterAst(parseFilter('eq(name, "a")'), { paramPrefix: 'tf', tenantParam: 'tenant' })).toEqual({
        sql: 'name = {tf0:String}',
        params: { tf0: 'a' },
        usesFeedback: false,
      });
    });

    it('is deterministic and keeps no state between calls', () => {
      expect(c('eq(name, "a")')).toEqual(c('eq(name, "a")'));
    });
  });
});
