import { z } from 'zod';
import { ValidationFailed } from './errors';
import { MAX_JSON_DEPTH } from './json-depth';
import { CountingPacer, EventLoopPacer } from './pacer';
import { PACED_PARSE_MIN_ITEMS, parseOrThrow, parseOrThrowPaced, storableValueProblems, textProblem } from './validation';

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

describe('parseOrThrowPaced', () => {
  const item = z.object({ id: z.string().uuid(), n: z.number().int().transform((v) => v * 2), tags: z.array(z.string()).max(2).optional() });
  const many = z.array(item).min(1).max(1000);
  const good = (i: number) => ({ id: '00000000-0000-4000-8000-' + String(i).padStart(12, '0'), n: i });
  /** What parseOrThrow gives: the data or the 422 items. */
  const outcome = (f: () => unknown) => {
    try {
      return { data: f() };
    } catch (err) {
      if (err instanceof ValidationFailed) return { errors: err.details };
      throw err;
    }
  };
  const outcomeAsync = async (f: () => Promise<unknown>) => {
    try {
      return { data: await f() };
    } catch (err) {
      if (err instanceof ValidationFailed) return { errors: err.details };
      throw err;
    }
  };

  it('answers as parseOrThrow (data, issues and their order) while giving the event loop way', async () => {
    const bigGood = Array.from({ length: 900 }, (_, i) => good(i));
    const bad = bigGood.map((v, i) => (i === 3 ? { ...v, n: 1.5 } : i === 400 ? { id: 'x', tags: ['a', 'b', 'c'] } : i === 899 ? 'no' : v));
    const cases: [z.ZodTypeAny, unknown][] = [
      [many, bigGood],
      [many, bad],
      [many, Array.from({ length: 1001 }, (_, i) => good(i))], // too many: refused by size alone
      [many, bigGood.slice(0, 5)], // small: parsed at once
      [many, 'not an array'],
      [many, [...bigGood.slice(0, 300), { id: '\u0000' }, { x: 'a\u0000' }]],
      [z.array(item).refine((a) => a.length % 2 === 0, 'even'), bigGood.slice(0, 301)], // other checks: parsed at once
    ];
    const pacer = new CountingPacer(0);
    for (const [schema, value] of cases) {
      const v = JSON.parse(JSON.stringify(value)) as unknown;
      expect(outcome(() => parseOrThrow(schema, v, ['body']))).not.toEqual({ errors: undefined });
      expect(await outcomeAsync(() => parseOrThrowPaced(schema, v, ['body'], {}, pacer))).toEqual(outcome(() => parseOrThrow(schema, v, ['body'])));
    }
    expect((await outcomeAsync(() => parseOrThrowPaced(many, bad, ['body'], {}, pacer))).errors?.map((e) => e.loc)).toEqual([
      ['body', 3, 'n'],
      ['body', 400, 'id'],
      ['body', 400, 'n'],
      ['body', 400, 'tags'],
      ['body', 899],
    ]);
    expect(pacer.yields).toBeGreaterThan(PACED_PARSE_MIN_ITEMS);
  });

  it('an object whose last member holds many items: as parseOrThrow, refinements included', async () => {
    const row = z.object({ id: z.string().uuid(), t: z.string().transform((v) => v.toUpperCase()), n: z.number().optional() });
    const upload = z
      .object({ name: z.string().min(1), start: z.number(), meta: z.record(z.string(), z.unknown()).nullish(), rows: z.array(row).max(1000) })
      .superRefine((b, ctx) => {
        if (b.name === 'bad') ctx.addIssue({ code: 'custom', path: ['name'], message: 'not that name' });
        b.rows.forEach((r, i) => {
          if ((r.n ?? 0) < b.start) ctx.addIssue({ code: 'custom', path: ['rows', i, 'n'], message: `row ${r.t} before the start` });
        });
      });
    const rows = Array.from({ length: 600 }, (_, i) => ({ id: good(i).id, t: `r${i}`, n: i }));
    const cases: unknown[] = [
      { name: 'ok', start: 0, rows },
      { name: 'ok', start: 599, rows }, // refinement issues on rows
      { name: 'bad', start: 0, meta: { a: 1 }, rows }, // refinement issue on the shell
      { name: '', start: 0, rows }, // a check issue continues: the refinement still runs
      { name: 'ok', start: 'x', rows }, // a type issue aborts the refinement
      { name: 'ok', start: 0, rows: rows.map((r, i) => (i % 200 === 7 ? { ...r, id: 'no' } : r)) },
      { name: 'ok', start: 0, rows: [...rows, ...rows] }, // too many rows: refused by size alone
      { start: 0, rows, extra: 1 },
    ];
    for (const value of cases) {
      const v = JSON.parse(JSON.stringify(value)) as unknown;
      const want = outcome(() => parseOrThrow(upload, v, ['body']));
      expect(await outcomeAsync(() => parseOrThrowPaced(upload, v, ['body'], {}, new EventLoopPacer(0)))).toEqual(want);
    }
    const pacer = new CountingPacer(0);
    await parseOrThrowPaced(upload, { name: 'ok', start: 0, rows }, ['body'], {}, pacer);
    expect(pacer.yields).toBeGreaterThanOrEqual(rows.length - 1);
    const refined = await outcomeAsync(() => parseOrThrowPaced(upload, { name: '', start: 599, rows }, ['body']));
    expect(refined.errors?.map((e) => e.loc)).toEqual([['body', 'name'], ...rows.slice(0, 599).map((_, i) => ['body', 'rows', i, 'n'])]);
  });
});
