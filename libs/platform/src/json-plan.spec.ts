import { EventLoopPacer } from './pacer';
import { jsonPlan, parseByPlan, PLAN_STRIDE } from './json-plan';
import { MAX_JSON_DEPTH } from './json-depth';

/** The value parseByPlan builds, cutting every container of at least `pieceBytes` bytes. */
async function viaPlan(text: string, pieceBytes: number): Promise<unknown> {
  const body = Buffer.from(text);
  return parseByPlan(body, jsonPlan(body, MAX_JSON_DEPTH, pieceBytes), new EventLoopPacer(0));
}

const DOCS = [
  '{}',
  '[]',
  ' \t\r\n { "a" : [ 1 , -2.5e+3 , true , false , null , "x" ] , "b" : { } , "c" : [ ] } \n',
  '{"post":[{"id":"1","inputs":{"q":"é€😀 \\"quoted\\" \\\\","n":[[],[{}],[[1]]]}},{"id":"2"}],"patch":[]}',
  '{"__proto__":{"polluted":true},"a":1,"a":2,"constructor":{"x":1}}',
  '[{"__proto__":[1,2]},"\\u0000\\ud800 lone",{"k\\"ey":"v\\\\"},1e400,-0,0.1]',
  '"just a string"',
  '12345',
  '[[[[[[["deep"]]]]]]]',
  '{"a":{"b":{"c":{"d":[1,{"e":"f"},[2,[3,[4]]]]}}},"z":"\\\\\\""}',
];

describe('jsonPlan + parseByPlan', () => {
  it.each(DOCS)('builds what JSON.parse builds, cut at every size: %s', async (text) => {
    const expected = JSON.parse(text) as unknown;
    for (const pieceBytes of [1, 2, 8, 64, 1 << 20]) {
      const got = await viaPlan(text, pieceBytes);
      expect(got).toEqual(expected);
      // toEqual ignores prototypes and key order: compare those too.
      expect(JSON.stringify(got)).toBe(JSON.stringify(expected));
      if (got !== null && typeof got === 'object' && !Array.isArray(got)) {
        expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
        expect(Object.keys(got)).toEqual(Object.keys(expected as object));
      }
    }
  });

  it('keeps "__proto__" an own property and leaves Object.prototype alone', async () => {
    const got = (await viaPlan('{"__proto__":{"polluted":true},"x":{"__proto__":1}}', 1)) as Record<string, unknown>;
    expect(Object.prototype.hasOwnProperty.call(got, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(got).toEqual(JSON.parse('{"__proto__":{"polluted":true},"x":{"__proto__":1}}'));
  });

  it('cuts a 5 MB batch into pieces of about a run each, and builds it the same', async () => {
    const run = (i: number) => ({ id: `${i}`, name: 'r', inputs: { text: 'x'.repeat(900), list: [1, 2, { a: 'é' }] } });
    const doc = { post: Array.from({ length: 5_000 }, (_, i) => run(i)), patch: Array.from({ length: 2_000 }, (_, i) => ({ id: `${i}`, outputs: { y: i } })) };
    const text = JSON.stringify(doc);
    const body = Buffer.from(text);
    const plan = jsonPlan(body, MAX_JSON_DEPTH);
    // root, post, patch opened and closed, and one leaf per run
    expect(plan.length / PLAN_STRIDE).toBe(6 + 5_000 + 2_000);
    expect(await parseByPlan(body, plan)).toEqual(doc);
  });
});
