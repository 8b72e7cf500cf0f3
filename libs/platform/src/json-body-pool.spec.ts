import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { bodyReader, LARGE_BODY_BYTES, type RawBodyRequest } from './body-reader';
import { JsonBodyPool, JsonWorkerLostError } from './json-body-pool';
import { MAX_JSON_DEPTH } from './json-depth';

type Answer = { status: number; json: Record<string, unknown>; headers: http.IncomingHttpHeaders };

/** An echo server behind bodyReader, with or without the pool. */
async function echoServer(pool?: JsonBodyPool): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.use(bodyReader(30 * 1024 * 1024, pool));
  app.post('/echo', (req: RawBodyRequest, res) => {
    res.json({ body: req.body, raw_bytes: req.rawBody?.length ?? null });
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function post(url: string, body: Buffer, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(parts).toString()) as Record<string, unknown>, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A body of `bytes` or more: `head`, then runs of ~1 KB as the SDK sends them, then `tail`. */
const large = (head: string, tail: string, bytes = LARGE_BODY_BYTES + 4096): string => {
  const run = JSON.stringify({ id: '00000000-0000-4000-8000-000000000000', name: 'r', inputs: { text: 'é😀'.repeat(200) } });
  const count = Math.ceil(bytes / run.length);
  return `${head}${Array.from({ length: count }, () => run).join(',')}${tail}`;
};

describe('JsonBodyPool through bodyReader: the same answers as the main-thread path', () => {
  let pool: JsonBodyPool;
  let withPool: { url: string; close(): Promise<void> };
  let without: { url: string; close(): Promise<void> };
  beforeAll(async () => {
    pool = new JsonBodyPool({ size: 1 });
    withPool = await echoServer(pool);
    without = await echoServer();
  });
  afterAll(async () => {
    await withPool?.close();
    await without?.close();
    await pool?.close();
  });

  const cases: [string, string][] = [
    ['a valid batch', large('{"post":[', '],"patch":[]}')],
    ['NUL and lone surrogates in values and keys', large('{"post":[', '],"x\\u0000":"\\ud800","y":"a\\u0000b","__proto__":{"p":1}}')],
    ['whitespace around everything', large(' \n{ "post" : [ ', ' ] } \r\n\t')],
    ['a valid body that is one large string', `"${'x'.repeat(LARGE_BODY_BYTES)}"`],
    ['invalid JSON early', `{"post":[,${large('', ']}')}`],
    ['invalid JSON at the very end', large('{"post":[', ']')],
    ['a trailing comma inside', large('{"post":[', ',]}')],
    ['invalid UTF-8 bytes', large('{"post":[', '],"bad":"\udcff"}')],
    ['nesting past the limit at the end', large('{"post":[', `],"deep":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`)],
    ['nesting past the limit, unterminated', `${'['.repeat(LARGE_BODY_BYTES + 10)}`],
    ['nesting at the limit exactly', large(`${'['.repeat(MAX_JSON_DEPTH - 1)}`, ']'.repeat(MAX_JSON_DEPTH - 1))],
  ];

  it.each(cases)('%s', async (_label, text) => {
    const body = Buffer.from(text);
    expect(body.length).toBeGreaterThan(LARGE_BODY_BYTES);
    const [a, b] = [await post(withPool.url, body), await post(without.url, body)];
    expect(a.status).toBe(b.status);
    expect(a.json).toEqual(b.json);
    if (a.status === 200) expect(a.json.raw_bytes).toBe(body.length);
  });

  it('a gzip body inflated to over the threshold goes the same way', async () => {
    const text = large('{"post":[', '],"patch":[]}');
    const [a, b] = [await post(withPool.url, gzipSync(text), { 'content-encoding': 'gzip' }), await post(without.url, gzipSync(text), { 'content-encoding': 'gzip' })];
    expect(a.status).toBe(200);
    expect(a.json).toEqual(b.json);
  });

  it('runs concurrent bodies in order through a pool of one, each with its own answer', async () => {
    const texts = [0, 1, 2, 3].map((i) => large(`{"i":${i},"post":[`, ']}'));
    const answers = await Promise.all(texts.map((t) => post(withPool.url, Buffer.from(t))));
    expect(answers.map((a) => (a.json.body as { i: number }).i)).toEqual([0, 1, 2, 3]);
  });
});

describe('JsonBodyPool when its worker dies', () => {
  it('a worker that runs out of memory fails its job with JsonWorkerLostError, and the next job gets a new worker', async () => {
    const pool = new JsonBodyPool({ size: 1, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 } });
    try {
      // 40 MB of small objects does not fit in 16 MB of heap.
      const huge = Buffer.from(`[${Array.from({ length: 400_000 }, () => '{"a":[1,2,3],"b":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}').join(',')}]`);
      await expect(pool.run(huge, MAX_JSON_DEPTH)).rejects.toBeInstanceOf(JsonWorkerLostError);
      const small = await pool.run(Buffer.from('{"ok":true}'), MAX_JSON_DEPTH);
      expect(small.kind).toBe('ok');
    } finally {
      await pool.close();
    }
  }, 60_000);

  it('bodyReader answers 503 with Retry-After (not a stall, nothing reaches the route) when the worker is lost', async () => {
    const pool = new JsonBodyPool({ size: 1, resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 4 } });
    const server = await echoServer(pool);
    try {
      const huge = Buffer.from(`[${Array.from({ length: 400_000 }, () => '{"a":[1,2,3],"b":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}').join(',')}]`);
      const a = await post(server.url, huge);
      expect(a.status).toBe(503);
      expect(a.headers['retry-after']).toBe('1');
      expect(a.json).toEqual({ detail: expect.stringMatching(/retry/) });
      // The service goes on: the next large body gets a fresh worker.
      const ok = await post(server.url, Buffer.from(large('{"post":[', ']}')));
      expect(ok.status).toBe(200);
    } finally {
      await server.close();
      await pool.close();
    }
  }, 60_000);
});

describe('JsonBodyPool: the storable flag', () => {
  const pool = new JsonBodyPool({ size: 1 });
  afterAll(() => pool.close());

  it.each([
    ['clean text', '{"a":["x","é€😀"],"b":{"c":1}}', true],
    ['a NUL escape', '{"a":"x\\u0000"}', false],
    ['a surrogate escape (even a valid pair: the walk decides)', '{"a":"\\uD83D\\uDE00"}', false],
    ['a lone surrogate escape in a key', '{"\\udc00":1}', false],
  ])('%s', async (_label, text, storable) => {
    const r = await pool.run(Buffer.from(text), MAX_JSON_DEPTH);
    expect(r.kind === 'ok' && r.storable).toBe(storable);
  });
});
