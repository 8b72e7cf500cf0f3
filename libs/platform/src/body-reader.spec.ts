import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import express from 'express';
import { UPLOADS_PATH } from '@th/contracts';
import { bodyReader, utf8Text, type RawBodyRequest } from './body-reader';

describe('utf8Text', () => {
  it('decodes characters split between chunks whole', () => {
    const bytes = Buffer.from(JSON.stringify({ text: 'é€😀 ascii ü' }));
    for (let cut1 = 1; cut1 < bytes.length - 1; cut1++) {
      const cut2 = Math.min(bytes.length - 1, cut1 + 3);
      const chunks = [bytes.subarray(0, cut1), bytes.subarray(cut1, cut2), bytes.subarray(cut2)];
      expect(utf8Text(chunks)).toBe(bytes.toString('utf8'));
    }
    expect(utf8Text([bytes])).toBe(bytes.toString('utf8'));
  });
});

describe('bodyReader on an HTTP server', () => {
  let server: http.Server;
  let port: number;
  const seen: { body: unknown; raw: Buffer | undefined }[] = [];

  beforeAll(async () => {
    const app = express();
    app.use(bodyReader(4096));
    const echo = (req: RawBodyRequest, res: express.Response) => {
      seen.push({ body: req.body, raw: req.rawBody });
      res.json({ body: req.body, raw: req.rawBody?.toString('base64') ?? null });
    };
    app.post('/echo', echo);
    app.post(new RegExp(`^${UPLOADS_PATH}/`), echo);
    app.post('/replace', (req: RawBodyRequest, res) => {
      req.rawBody = Buffer.from('replaced');
      res.json({ raw: req.rawBody.toString() });
    });
    server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** Sends the body in the given pieces (chunked encoding, each piece its own write and TCP send); a header given as '' is not sent. */
  const send = (path: string, pieces: Buffer[], headers: Record<string, string> = {}) =>
    new Promise<{ status: number; json: Record<string, unknown> }>((resolve, reject) => {
      const sent = Object.fromEntries(Object.entries({ 'content-type': 'application/json', ...headers }).filter(([, v]) => v !== ''));
      const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: sent }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(parts).toString()) as Record<string, unknown> }));
      });
      req.on('error', reject);
      void (async () => {
        for (const p of pieces) {
          req.write(p);
          await new Promise((r) => setTimeout(r, 5));
        }
        req.end();
      })();
    });

  it('parses a JSON body sent in pieces that split characters, and gives its exact bytes as rawBody', async () => {
    const bytes = Buffer.from(JSON.stringify({ name: 'Grüße 😀', n: [1, 2, 3] }));
    const at = bytes.indexOf(0xf0) + 2; // inside the emoji's four bytes
    const r = await send('/echo', [bytes.subarray(0, 5), bytes.subarray(5, at), bytes.subarray(at)]);
    expect(r.status).toBe(200);
    expect(r.json.body).toEqual({ name: 'Grüße 😀', n: [1, 2, 3] });
    expect(Buffer.from(r.json.raw as string, 'base64').equals(bytes)).toBe(true);
  });

  it('lets a route replace rawBody', async () => {
    const r = await send('/replace', [Buffer.from('{"a":1}')]);
    expect(r.json).toEqual({ raw: 'replaced' });
  });

  it('inflates a gzip body: rawBody is the inflated bytes', async () => {
    const bytes = Buffer.from('{"zipped":true}');
    const r = await send('/echo', [gzipSync(bytes)], { 'content-encoding': 'gzip' });
    expect(r.json.body).toEqual({ zipped: true });
    expect(Buffer.from(r.json.raw as string, 'base64').equals(bytes)).toBe(true);
  });

  it('answers invalid JSON with 422 and its position, an oversized body with 413', async () => {
    const before = seen.length;
    const bad = await send('/echo', [Buffer.from('{"a":'), Buffer.from(' tru}')]);
    expect(bad.status).toBe(422);
    const detail = (bad.json.detail as { loc: unknown[]; type: string }[])[0];
    expect(detail.type).toBe('json_invalid');
    expect(detail.loc[0]).toBe('body');
    const big = await send('/echo', [Buffer.alloc(3000, 0x20), Buffer.alloc(3000, 0x20)]);
    expect(big.status).toBe(413);
    expect(seen.length).toBe(before); // neither reached the route
  });

  it('keeps an upload raw whatever its Content-Type, or with none; elsewhere no Content-Type still means JSON', async () => {
    const bytes = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0xff, 0x7b, 0x22]); // gzip magic, then bytes that are no JSON
    for (const type of ['', 'application/octet-stream', 'application/json', 'text/plain']) {
      const r = await send(`${UPLOADS_PATH}/deployments/x/sources/y.tar.gz`, [bytes], { 'content-type': type });
      expect([type, r.status]).toEqual([type, 200]);
      expect(r.json.body).toBeUndefined();
      expect(Buffer.from(r.json.raw as string, 'base64').equals(bytes)).toBe(true);
    }
    expect((await send('/echo', [bytes], { 'content-type': '' })).status).toBe(422);
    expect((await send('/echo', [Buffer.from('{"a":1}')], { 'content-type': '' })).json.body).toEqual({ a: 1 });
  });

  it('leaves an empty body undefined', async () => {
    const r = await send('/echo', [], { 'transfer-encoding': 'chunked' });
    expect(r.status).toBe(200);
    expect(r.json.body).toBeUndefined();
  });
});
