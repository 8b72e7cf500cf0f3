import { CountingPacer, EventLoopPacer } from './pacer';
import { isLargeJson, JSON_STRING_PIECE_CHARS, JSON_TEXT_SPLIT_NODES, jsonBytes, jsonBytesOf, jsonStringParts, jsonTextOf, prepareJsonBytes, prepareJsonText, utf8Bytes } from './json-text';

const big = (n: number): Record<string, unknown> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}"\n`, i % 3 === 0 ? { a: [i, null, 'é€😀', { b: true }] } : i % 3 === 1 ? [i, -0, 1e21, 'x\u2028'] : `v${i}`]));

describe('prepareJsonText', () => {
  it('makes exactly what JSON.stringify makes for large values, in slices', async () => {
    const values: unknown[] = [
      big(JSON_TEXT_SPLIT_NODES),
      [big(JSON_TEXT_SPLIT_NODES / 2), big(10), [], {}, 'tail'],
      { only: { one: { member: big(JSON_TEXT_SPLIT_NODES) } } },
      // Members JSON.stringify leaves out (objects) or writes as null (arrays).
      Object.assign(big(JSON_TEXT_SPLIT_NODES), { u: undefined, f: () => 1, arr: [undefined, () => 1, Symbol('s')] }),
      { date: new Date(0), nested: big(JSON_TEXT_SPLIT_NODES) },
    ];
    const pacer = new CountingPacer(0);
    for (const v of values) {
      await prepareJsonText(v, pacer);
      expect(jsonTextOf(v)).toBe(JSON.stringify(v));
    }
    expect(pacer.yields).toBeGreaterThan(100);
  });

  it('leaves small values and non-objects to the writer', async () => {
    const small = { a: 1, b: [1, 2, 3], c: { d: 'e' } };
    await prepareJsonText(small, new EventLoopPacer());
    await prepareJsonText('text', new EventLoopPacer());
    await prepareJsonText(null, new EventLoopPacer());
    expect(jsonTextOf(small)).toBeUndefined();
    expect(jsonTextOf('text')).toBeUndefined();
  });
});

describe('prepareJsonBytes', () => {
  it('makes the UTF-8 of exactly what JSON.stringify makes for large values, in slices', async () => {
    const values: unknown[] = [
      big(JSON_TEXT_SPLIT_NODES),
      [big(JSON_TEXT_SPLIT_NODES / 2), big(10), [], {}, 'tail'],
      Object.assign(big(JSON_TEXT_SPLIT_NODES), { u: undefined, f: () => 1, arr: [undefined, () => 1, Symbol('s')], lone: '\ud83d' }),
      { date: new Date(0), nested: big(JSON_TEXT_SPLIT_NODES) },
    ];
    const pacer = new CountingPacer(0);
    for (const v of values) {
      await prepareJsonBytes(v, pacer);
      expect(jsonBytesOf(v)?.equals(Buffer.from(JSON.stringify(v), 'utf8'))).toBe(true);
    }
    expect(pacer.yields).toBeGreaterThan(100);
  });

  it('leaves small values and non-objects to the writer', async () => {
    const small = { a: 1, b: [1, 2, 3], c: { d: 'e' } };
    await prepareJsonBytes(small, new EventLoopPacer());
    await prepareJsonBytes('text', new EventLoopPacer());
    await prepareJsonBytes(null, new EventLoopPacer());
    expect(jsonBytesOf(small)).toBeUndefined();
    expect(jsonBytesOf('text')).toBeUndefined();
    expect(jsonBytesOf(null)).toBeUndefined();
  });
});

describe('jsonBytes', () => {
  it('makes the UTF-8 of exactly what JSON.stringify makes, in slices for large values', async () => {
    const bigArray = Array.from({ length: JSON_TEXT_SPLIT_NODES }, (_, i) => (i % 4 === 0 ? undefined : i % 4 === 1 ? { x: 'é€😀', i } : [i, 'y']));
    const values: unknown[] = [
      big(JSON_TEXT_SPLIT_NODES),
      [big(JSON_TEXT_SPLIT_NODES / 2), big(10), [], {}, 'tail'],
      bigArray,
      { first: undefined, list: bigArray, last: () => 1 },
      Object.assign(big(JSON_TEXT_SPLIT_NODES), { u: undefined, f: () => 1, arr: [undefined, () => 1, Symbol('s')] }),
      { date: new Date(0), nested: big(JSON_TEXT_SPLIT_NODES), empty: { a: [] } },
      { small: [1, 'two', null] },
    ];
    const pacer = new CountingPacer(0);
    for (const v of values) expect((await jsonBytes(v, pacer)).equals(Buffer.from(JSON.stringify(v), 'utf8'))).toBe(true);
    expect(pacer.yields).toBeGreaterThan(100);
  });

  it('tells large values from small ones and non-objects', () => {
    expect(isLargeJson(big(JSON_TEXT_SPLIT_NODES))).toBe(true);
    expect(isLargeJson({ a: 1 })).toBe(false);
    expect(isLargeJson('text')).toBe(false);
    expect(isLargeJson(null)).toBe(false);
    expect(isLargeJson(new Date())).toBe(false);
  });
});

describe('jsonStringParts', () => {
  it('joins to JSON.stringify(s), pieces never splitting a surrogate pair, lone surrogates escaped as there', async () => {
    const n = JSON_STRING_PIECE_CHARS;
    const strings = [
      'short "q" \n',
      `x${'😀'.repeat(n)}`, // pairs across every piece boundary
      `${'a'.repeat(n - 1)}\ud83d${'b'.repeat(n)}\ude00"\u0000`, // a lone high surrogate at a boundary, a lone low later
      `${'é€\n"'.repeat(n)}`,
    ];
    for (const s of strings) {
      const parts = await jsonStringParts(s, new EventLoopPacer(0));
      expect(parts.join('')).toBe(JSON.stringify(s));
      expect((await utf8Bytes(parts)).equals(Buffer.from(JSON.stringify(s)))).toBe(true);
      if (s.length > n) expect(parts.length).toBeGreaterThan(3);
    }
  });
});
