import { z } from 'zod';
import { ValidationFailed } from './errors';
import { MAX_JSON_DEPTH } from './json-depth';
import { parseOrThrow, storableValueProblems, textProblem } from './validation';

const nest = (n: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = i % 2 === 0 ? { a: v } : [v];
  return v;
};

describe('storable request values', () => {
  it('textProblem: NUL and lone surrogates (high, low, at either end) refused; pairs and ordinary text kept', () => {
    expect(textProblem('plain text, émoji 😀, 中文')).toBeNull();
    expect(textProblem('\ud83d\ude00')).toBeNull();
    expect(textProblem('a\u0000')?.type).toBe('string_nul_character');
    for (const s of ['\ud800', 'x\ud800', '\ud800x', '\udc00', 'x\udfff', '\ude00\ud83d', '\ud83d\ud83d\ude00'.slice(0, 2)]) {
      expect(textProblem(s)?.type).toBe('string_unicode');
    }
  });

  it('reports each bad string or key at its path under the root', () => {
    const problems = storableValueProblems({ ok: 'x', list: ['y', 'b\u0000'], obj: { 'k\ud800': 1 } }, ['body']);
    expect(problems).toEqual([
      { loc: ['body', 'list', 1], msg: expect.stringContaining('NUL'), type: 'string_nul_character' },
      { loc: ['body', 'obj', 'k\ud800'], msg: expect.stringContaining('in a key'), type: 'string_unicode' },
    ]);
    expect(storableValueProblems({ list: ['b\u0000'], obj: { 'k\ud800': 1 } }, ['body'], false)).toEqual([]);
  });

  it('bounds depth: MAX_JSON_DEPTH levels pass, one more is refused, 100,000 levels do not overflow the stack', () => {
    expect(storableValueProblems(nest(MAX_JSON_DEPTH), ['body'])).toEqual([]);
    const [p] = storableValueProblems(nest(MAX_JSON_DEPTH + 1), ['body']);
    expect(p).toMatchObject({ type: 'json_too_deep' });
    expect(p.loc).toHaveLength(MAX_JSON_DEPTH + 1);
    expect(storableValueProblems(nest(100_000), ['body'], false)[0].type).toBe('json_too_deep');
  });

  it('parseOrThrow refuses before zod runs; anyText keeps strings but still bounds depth', () => {
    const schema = z.object({ s: z.string() });
    expect(() => parseOrThrow(schema, { s: '\u0000' }, ['body'])).toThrow(ValidationFailed);
    expect(parseOrThrow(schema, { s: '\u0000' }, ['body'], { anyText: true })).toEqual({ s: '\u0000' });
    expect(() => parseOrThrow(z.unknown(), nest(MAX_JSON_DEPTH + 1), ['body'], { anyText: true })).toThrow(ValidationFailed);
  });

  it('stops after 20 problems', () => {
    expect(storableValueProblems(Array.from({ length: 1000 }, () => '\u0000'), ['body'])).toHaveLength(20);
  });
});
