import { jsonDepthExceeded, JsonTooDeepError, MAX_JSON_DEPTH, parseClientJson } from './json-depth';

describe('JSON depth bound', () => {
  const nested = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;

  it('accepts documents up to the limit and names the bracket past it', () => {
    expect(jsonDepthExceeded(nested(MAX_JSON_DEPTH))).toBe(-1);
    expect(jsonDepthExceeded(nested(MAX_JSON_DEPTH + 1))).toBe(MAX_JSON_DEPTH);
    expect(jsonDepthExceeded('{"a":{"b":[1,{"c":2}]}}', 4)).toBe(-1);
    expect(jsonDepthExceeded('{"a":{"b":[1,{"c":2}]}}', 3)).toBe(13);
    expect(() => parseClientJson(nested(MAX_JSON_DEPTH + 1))).toThrow(JsonTooDeepError);
    expect(parseClientJson('{"a":[1]}')).toEqual({ a: [1] });
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const s = JSON.stringify({ a: `${'['.repeat(500)}"\\${'{'.repeat(500)}\\\\`, b: ['x'] });
    expect(jsonDepthExceeded(s, 2)).toBe(-1);
    expect(parseClientJson(s)).toEqual(JSON.parse(s));
    expect(jsonDepthExceeded('["\\\\\\"[[[", [[1]]]', 2)).toBe(13);
  });

  it('leaves invalid JSON to JSON.parse', () => {
    expect(jsonDepthExceeded('["unterminated')).toBe(-1);
    expect(() => parseClientJson('["unterminated')).toThrow(SyntaxError);
    expect(() => parseClientJson('{"a":1}}}}')).toThrow(SyntaxError);
  });

  it('checks a million levels without recursion, in linear time', () => {
    const t0 = performance.now();
    expect(jsonDepthExceeded(nested(1_000_000), 2_000_000)).toBe(-1); // the whole text is scanned
    expect(jsonDepthExceeded('['.repeat(1_000_000))).toBe(MAX_JSON_DEPTH);
    expect(performance.now() - t0).toBeLessThan(2000);
  });
});
