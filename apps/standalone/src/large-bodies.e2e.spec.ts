import { randomUUID } from 'node:crypto';
import { LARGE_BODY_BYTES, MAX_JSON_DEPTH } from '@th/platform';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

const T0 = '2026-11-22T04:04:29.623001Z';
/** Trailing whitespace that takes a body past LARGE_BODY_BYTES: the same JSON, parsed by the worker pool. */
const PAD = ' '.repeat(LARGE_BODY_BYTES + 1);

/**
 * Bodies over LARGE_BODY_BYTES are checked and cut by worker threads and built on the event loop in slices
 * (libs/platform json-body-pool.ts): through the real routes they get exactly the answers small bodies get.
 */
describe('large JSON bodies through the standalone service', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  }, 120_000);
  afterAll(async () => {
    await svc?.close();
  });

  const postRaw = async (path: string, text: string): Promise<{ status: number; body: Json }> => {
    const res = await svc.api(path, { method: 'POST', body: text, headers: { 'content-type': 'application/json' } });
    return { status: res.status, body: (await res.json()) as Json };
  };
  /** The answer to `text` as it is and padded past the threshold; they must be the same. */
  const both = async (path: string, value: unknown | string) => {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    const small = await postRaw(path, text);
    const large = await postRaw(path, text + PAD);
    expect(large).toEqual(small);
    return small;
  };
  const run = (extra: Json = {}): Json => ({ id: randomUUID(), name: 'large', run_type: 'chain', start_time: T0, ...extra });

  it('a refused batch: the same 422 with the same loc, small or large', async () => {
    const a = await both('/api/v1/runs/batch', { post: [run(), run({ run_type: 'bogus' })], patch: [] });
    expect(a.status).toBe(422);
    expect(a.body.detail).toContainEqual(expect.objectContaining({ loc: ['body', 'post', 1, 'run_type'] }));
  });

  it('nesting past the bound, invalid JSON, NUL and lone surrogates: the same answers on every route', async () => {
    const deep = `${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}`;
    const tooDeep = await both('/api/v1/runs', `{"id":"${randomUUID()}","name":"d","run_type":"chain","inputs":{"x":${deep}}}`);
    expect(tooDeep.status).toBe(422);
    expect((tooDeep.body.detail as Json[])[0].type).toBe('json_too_deep');
    const invalid = await both('/api/v1/runs/batch', '{"post":[{"id":1,}]}');
    expect(invalid.status).toBe(422);
    expect((invalid.body.detail as Json[])[0].type).toBe('json_invalid');

    const ds = (await postRaw('/api/v1/datasets', JSON.stringify({ name: `large-${randomUUID()}` }))).body.id as string;
    const nul = await both('/api/v1/examples/bulk', [{ dataset_id: ds, inputs: { q: 'fine' } }, { dataset_id: ds, inputs: { 'k\u0000': 1 } }]);
    expect(nul.status).toBe(422);
    expect(nul.body.detail).toContainEqual(expect.objectContaining({ loc: ['body', 1, 'inputs', 'k\u0000'], type: 'string_nul_character' }));
    const lone = await both('/api/v1/feedback', { run_id: randomUUID(), key: 'k', comment: 'a\ud800b' });
    expect(lone.status).toBe(422);
    expect(lone.body.detail).toContainEqual(expect.objectContaining({ loc: ['body', 'comment'], type: 'string_unicode' }));
    expect((await (await svc.api(`/api/v1/examples?dataset=${ds}`)).json()) as Json[]).toEqual([]);
  });

  it('a large body cut into pieces: 422 at the index of the bad item; a valid one is stored whole', async () => {
    const ds = (await postRaw('/api/v1/datasets', JSON.stringify({ name: `large-${randomUUID()}` }))).body.id as string;
    const fine = Array.from({ length: 1200 }, (_, i) => ({ dataset_id: ds, inputs: { q: `${i} ${'é'.repeat(500)}` } }));
    const refused = await postRaw('/api/v1/examples/bulk', JSON.stringify([...fine, { dataset_id: ds, inputs: { q: 'a\ud800' } }]));
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toContainEqual(expect.objectContaining({ loc: ['body', 1200, 'inputs', 'q'], type: 'string_unicode' }));

    const runs = Array.from({ length: 1200 }, () => run({ inputs: { text: 'x'.repeat(1000), nested: { list: [1, { a: 'é😀' }] } } }));
    const text = JSON.stringify({ post: runs, patch: [] });
    expect(text.length).toBeGreaterThan(LARGE_BODY_BYTES);
    const accepted = await postRaw('/api/v1/runs/batch', text);
    expect(accepted.status).toBe(202);
    // The default acknowledgement: a 2xx means written.
    const last = runs[runs.length - 1];
    const stored = (await (await svc.api(`/api/v1/runs/${last.id as string}`)).json()) as Json;
    expect(stored.inputs).toEqual(last.inputs);
  }, 60_000);
});
