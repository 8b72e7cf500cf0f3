import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
const json = async <T = Json>(res: Response): Promise<T> => (await res.json()) as T;

describe('the examples filter language through the standalone service', () => {
  let svc: TestStandalone;
  let datasetId: string;

  beforeAll(async () => {
    svc = await startTestStandalone();
    const res = await svc.api('/api/v1/datasets', { method: 'POST', json: { name: `filter-${randomUUID()}` } });
    datasetId = (await json(res)).id as string;
    const examples = [
      { inputs: { q: 'a', lang: 'en' }, metadata: { foo: 'bar', n: 1, tags: ['x', 'y'], nested: { deep: 'yes' } }, split: 'train' },
      { inputs: { q: 'b', lang: 'fr' }, metadata: { foo: 'baz', n: 5, x: null }, split: 'test' },
      { inputs: { q: 'c', lang: 'en' }, metadata: { foo: 'bar', n: 10, x: 3 }, split: ['train', 'test'] },
      { inputs: { q: 'd' }, metadata: { n: 'ten' } },
      { inputs: { q: 'e' } },
    ];
    const created = await svc.api('/api/v1/examples/bulk', { method: 'POST', json: examples.map((e) => ({ ...e, dataset_id: datasetId })) });
    expect(created.status).toBe(200);
  });
  afterAll(async () => {
    await svc?.close();
  });

  const matching = async (filter: string): Promise<string[]> => {
    const res = await svc.api(`/api/v1/examples?dataset=${datasetId}&filter=${encodeURIComponent(filter)}`);
    expect(res.status).toBe(200);
    return (await json<Json[]>(res)).map((e) => (e.inputs as Json).q as string).sort();
  };
  const refused = async (filter: string, msg: RegExp) => {
    const res = await svc.api(`/api/v1/examples?dataset=${datasetId}&filter=${encodeURIComponent(filter)}`);
    expect(res.status).toBe(422);
    const detail = (await json(res)).detail as { loc: unknown[]; msg: string; type: string }[];
    expect(detail[0].loc).toEqual(['query', 'filter']);
    expect(detail[0].msg).toMatch(msg);
  };

  it('compares metadata values with eq, neq, gt, gte, lt and lte', async () => {
    expect(await matching('eq(metadata.foo, "bar")')).toEqual(['a', 'c']);
    expect(await matching("eq(metadata.foo, 'baz')")).toEqual(['b']);
    expect(await matching('neq(metadata.foo, "bar")')).toEqual(['b', 'd', 'e']);
    expect(await matching('eq(metadata.n, 5)')).toEqual(['b']);
    expect(await matching('gt(metadata.n, 1)')).toEqual(['b', 'c']);
    expect(await matching('gte(metadata.n, 1)')).toEqual(['a', 'b', 'c']);
    expect(await matching('lt(metadata.n, 5.5)')).toEqual(['a', 'b']);
    expect(await matching('lte(metadata.n, 10)')).toEqual(['a', 'b', 'c']);
    expect(await matching('gt(metadata.foo, "bas")')).toEqual(['b']);
    expect(await matching('eq(metadata.nested.deep, "yes")')).toEqual(['a']);
    expect(await matching('eq(metadata.tags, "y")')).toEqual(['a']);
    expect(await matching('eq(metadata.x, null)')).toEqual(['b']);
    expect(await matching('eq(metadata.dataset_split, "test")')).toEqual(['b', 'c']);
    expect(await matching('eq(inputs.lang, "en")')).toEqual(['a', 'c']);
  });

  it('supports has, exists, and, or and not', async () => {
    expect(await matching(`has(metadata, '{"foo":"bar","n":10}')`)).toEqual(['c']);
    expect(await matching(`has(metadata, '{"tags":["x"]}')`)).toEqual(['a']);
    expect(await matching('exists(metadata, "x")')).toEqual(['b', 'c']);
    // The Python SDK quotes the first argument: has("metadata", '{"foo": "bar"}').
    expect(await matching(`has("metadata", '{"foo": "bar", "n": 10}')`)).toEqual(['c']);
    expect(await matching(`exists('metadata', "x")`)).toEqual(['b', 'c']);
    expect(await matching('and(eq(metadata.foo, "bar"), exists(metadata, "x"))')).toEqual(['c']);
    expect(await matching('or(eq(metadata.foo, "baz"), eq(metadata.n, "ten"))')).toEqual(['b', 'd']);
    expect(await matching('not(exists(metadata, "foo"))')).toEqual(['d', 'e']);
    expect(await matching('and(not(eq(metadata.foo, "bar")), or(gt(metadata.n, 2), eq(inputs.q, "e")))')).toEqual(['b', 'e']);
  });

  it('binds values as parameters: quotes and SQL in values match nothing and change nothing', async () => {
    expect(await matching(`eq(metadata.foo, "bar'); DELETE FROM datasets.examples; --")`)).toEqual([]);
    expect(await matching(`eq(metadata.foo, 'it\\'s')`)).toEqual([]);
    expect(await matching(`has(metadata, '{"foo":"x\\' OR 1=1 --"}')`)).toEqual([]);
    expect(await matching('gte(metadata.n, 0)')).toEqual(['a', 'b', 'c']);
  });

  it('refuses malformed and unsupported filters with 422', async () => {
    await refused('eq(metadata.foo, "bar"', /expected "," or "\)"|end of filter/);
    await refused('eq(metadata.foo)', /takes 2 arguments/);
    await refused('search("bar")', /unsupported filter function "search"/);
    await refused('eq(created_at, "2020")', /expected a field like metadata/);
    await refused('eq(foo.bar, 1)', /expected a field like metadata/);
    await refused('eq(metadata.foo, "unterminated)', /unterminated string/);
    await refused('gt(metadata.n, true)', /number or a string/);
    await refused(`has(metadata, '{bad json')`, /JSON value/);
    await refused('exists(metadata, 3)', /key string/);
    await refused(`has("created_at", '{}')`, /takes metadata, inputs or outputs first/);
    await refused('and()', /at least one argument/);
    await refused('metadata.foo', /function call/);
    await refused('eq(metadata.foo, "a") extra', /unexpected/);
    await refused(`${'not('.repeat(40)}exists(metadata, "x")${')'.repeat(40)}`, /nested deeper/);
    await refused('   ', /empty/);
  });

  it('works with the published langsmith SDK listExamples filter', async () => {
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, timeout_ms: 20_000 });
    const got = [];
    for await (const e of client.listExamples({ datasetId, filter: 'and(eq(metadata.foo, "bar"), gte(metadata.n, 2))' })) got.push(e.inputs.q);
    expect(got).toEqual(['c']);
    await expect(
      (async () => {
        for await (const e of client.listExamples({ datasetId, filter: 'like(metadata.foo, "b%")' })) void e;
      })(),
    ).rejects.toThrow(/422/);
  });
});
