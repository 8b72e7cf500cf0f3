import { EventLoopPacer } from './pacer';
import { jsonPlan, parseByPlan } from './json-plan';
import { MAX_JSON_DEPTH } from './json-depth';
import { storableValueProblems } from './validation';

async function built(text: string, storable: boolean): Promise<Record<string, unknown>> {
  const body = Buffer.from(text);
  return (await parseByPlan(body, jsonPlan(body, MAX_JSON_DEPTH, 8), new EventLoopPacer(0), storable)) as Record<string, unknown>;
}

describe('objects of a body marked storable by the JSON worker', () => {
  it('are skipped by storableValueProblems at their depth, walked when met deeper', async () => {
    const body = await built(JSON.stringify({ a: { b: [1, { c: 'x' }] }, d: 'y' }), true);
    expect(storableValueProblems(body, ['body'])).toEqual([]);
    // A marked value inside a new value, deeper than it was: walked (so the depth limit still holds).
    let wrapped: unknown = body.a;
    for (let i = 0; i < MAX_JSON_DEPTH; i++) wrapped = [wrapped];
    expect(storableValueProblems(wrapped, ['body']).map((p) => p.type)).toEqual(['json_too_deep']);
  });

  it('a value built without the mark is walked as before', async () => {
    const body = await built('{"a":{"b":"nul \\u0000 here"},"c":["\\ud800"]}', false);
    expect(storableValueProblems(body, ['body']).map((p) => p.loc)).toEqual([
      ['body', 'a', 'b'],
      ['body', 'c', 0],
    ]);
  });

  it('a value added later to a marked object by server code is not vouched for by the mark of its new parent', async () => {
    const body = await built(JSON.stringify({ a: { b: 'ok' } }), true);
    // The documented contract: marked request values are not mutated with client text. A fresh object is walked.
    const copy = { ...body, extra: 'nul \u0000' };
    expect(storableValueProblems(copy, ['body']).map((p) => p.loc)).toEqual([['body', 'extra']]);
  });
});
