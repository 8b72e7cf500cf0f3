import { createHash, randomBytes } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Request } from 'express';
import { IDENTITY_HEADER, verifyIdentity } from '@th/auth';
import type { Identity } from '@th/contracts';
import { gatewayProxy, type ExtraHeaders } from './gateway-proxy';
import { closeServer, listen, uploadDigest } from './proxy.testing';

/**
 * The proxy hop end to end on real local servers: a caller (node:http client) -> the gateway's HTTP
 * server running gatewayProxy -> a service (node:http or raw TCP).
 */
const KEY = 'k'.repeat(32);
const IDENTITY: Identity = {
  organization_id: 'org-1',
  tenant_id: 'ws-1',
  user_id: null,
  credential_id: 'cred-1',
  credential_type: 'service_key',
  plan: 'enterprise',
  permissions: ['runs:read'],
};
const EXTRA: ExtraHeaders = { 'RateLimit-Limit': '100', 'RateLimit-Remaining': '99', 'RateLimit-Reset': '60', 'RateLimit-Policy': '100;w=60' };

/** A resolver with one valid key (the gateway's IdentityService reads the database; the proxy only needs the interface). */
const resolver = { resolve: async (req: Request) => (req.headers['x-api-key'] === 'good-key' ? IDENTITY : null) };


interface Reply {
  status: number;
  raw: string[];
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function call(port: number, path: string, opts: { method?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer[] } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, raw: res.rawHeaders, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    for (const part of opts.body ?? []) req.write(part);
    req.end();
  });
}

describe('gateway proxy relay', () => {
  let service: http.Server;
  let servicePort: number;
  let gateway: http.Server;
  let port: number;
  const routes = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>();

  beforeAll(async () => {
    service = http.createServer((req, res) => {
      const route = routes.get(req.url!.split('?')[0].replace(/^\/api\/v1/, ''));
      if (route) return route(req, res);
      res.writeHead(404);
      res.end();
    });
    servicePort = await listen(service);
    const upstream = `http://127.0.0.1:${servicePort}`;
    const proxy = gatewayProxy({ upstreams: { ingest: upstream, query: upstream }, resolver, signingKey: KEY, maxBodyBytes: 10 * 1024 * 1024 });
    gateway = http.createServer((req, res) =>
      proxy(req, res, () => {
        res.writeHead(404);
        res.end('not proxied');
      }, req.headers['x-no-extra'] ? undefined : EXTRA),
    );
    port = await listen(gateway);
  });
  afterAll(async () => {
    await closeServer(gateway);
    await closeServer(service);
  });

  routes.set('/sessions/echo', (req, res) => {
    const body = JSON.stringify({ url: req.url, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });

  it('forwards the request with the signed identity, without credentials, with X-Forwarded-Host', async () => {
    const r = await call(port, '/api/v1/sessions/echo?limit=5&name=a%20b', { headers: { 'x-api-key': 'good-key', authorization: 'Bearer x', cookie: 'th_session=a.b.c', 'x-custom': 'yes', [IDENTITY_HEADER]: 'forged' } });
    expect(r.status).toBe(200);
    const seen = JSON.parse(r.body.toString()) as { url: string; headers: Record<string, string> };
    expect(seen.url).toBe('/api/v1/sessions/echo?limit=5&name=a%20b');
    expect(seen.headers.host).toBe(`127.0.0.1:${servicePort}`);
    expect(seen.headers['x-forwarded-host']).toBe(`127.0.0.1:${port}`);
    expect(seen.headers['x-custom']).toBe('yes');
    expect(seen.headers['x-api-key']).toBeUndefined();
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.headers.cookie).toBeUndefined();
    expect(verifyIdentity(seen.headers[IDENTITY_HEADER], KEY)).toEqual(IDENTITY);
    // The limiter's headers ride on the service's answer.
    expect(r.headers['ratelimit-limit']).toBe('100');
    expect(r.headers['ratelimit-policy']).toBe('100;w=60');
    expect(r.headers['content-length']).toBe(String(r.body.length));
  });

  it('answers 401 without a key, with the limiter headers', async () => {
    const r = await call(port, '/api/v1/sessions/echo');
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body.toString())).toEqual({ detail: 'Missing or invalid API key' });
    expect(r.headers['ratelimit-remaining']).toBe('99');
  });

  routes.set('/sessions/dup', (_req, res) => {
    // Repeated headers as a service may send them; hop-by-hop ones must not reach the caller.
    res.writeHead(200, [
      ['content-type', 'text/plain'],
      ['content-type', 'text/html'],
      ['vary', 'accept'],
      ['vary', 'origin'],
      ['set-cookie', 'a=1'],
      ['set-cookie', 'b=2'],
      ['keep-alive', 'timeout=5'],
      ['x-th-identity', 'leak'],
      ['content-length', '2'],
    ] as unknown as http.OutgoingHttpHeaders);
    res.end('ok');
  });

  it('relays repeated headers as node:http reads them and drops hop-by-hop ones', async () => {
    const r = await call(port, '/api/v1/sessions/dup', { headers: { 'x-api-key': 'good-key' } });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain');
    expect(r.headers.vary).toBe('accept, origin');
    expect(r.headers['set-cookie']).toEqual(['a=1', 'b=2']);
    expect(r.headers[IDENTITY_HEADER]).toBeUndefined();
    expect(r.headers['keep-alive']).toBeUndefined();
    expect(r.raw.filter((h) => h.toLowerCase() === 'content-type')).toHaveLength(1);
    expect(r.body.toString()).toBe('ok');
  });

  const big = randomBytes(2 * 1024 * 1024 + 3);
  routes.set('/sessions/big', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': big.length });
    res.end(big);
  });
  routes.set('/sessions/chunked', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    for (let off = 0; off < big.length; off += 300_000) res.write(big.subarray(off, off + 300_000));
    res.end();
  });

  it.each(['/api/v1/sessions/big', '/api/v1/sessions/chunked'])('streams a large answer (%s) intact', async (path) => {
    const r = await call(port, path, { headers: { 'x-api-key': 'good-key' } });
    expect(r.status).toBe(200);
    expect(createHash('sha256').update(r.body).digest('hex')).toBe(createHash('sha256').update(big).digest('hex'));
    if (path.endsWith('big')) expect(r.headers['content-length']).toBe(String(big.length));
    else expect(r.headers['transfer-encoding']).toBe('chunked');
  });

  routes.set('/runs/multipart', uploadDigest(202));

  it.each([
    ['Content-Length', true],
    ['chunked', false],
  ])('streams a %s request body to the service', async (_kind, withLength) => {
    const parts = [randomBytes(100_000), randomBytes(1), randomBytes(700_000)];
    const all = Buffer.concat(parts);
    const headers: http.OutgoingHttpHeaders = { 'x-api-key': 'good-key', 'content-type': 'application/octet-stream' };
    if (withLength) headers['content-length'] = all.length;
    const r = await call(port, '/runs/multipart', { method: 'POST', headers, body: parts });
    expect(r.status).toBe(202);
    expect(JSON.parse(r.body.toString())).toEqual({
      n: all.length,
      sha: createHash('sha256').update(all).digest('hex'),
      te: withLength ? null : 'chunked',
      cl: withLength ? String(all.length) : null,
    });
  });

  let events: http.ServerResponse | null = null;
  let eventsClosed: Promise<void> = Promise.resolve();
  routes.set('/runs/stream', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('data: 1\n\n');
    events = res;
    eventsClosed = new Promise((resolve) => res.on('close', () => resolve()));
  });

  it('passes SSE events on as they are written, and a caller leaving ends the stream at the service', async () => {
    const seen: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/runs/stream', headers: { 'x-api-key': 'good-key' }, agent: false }, (res) => {
        expect(res.headers['content-type']).toBe('text/event-stream');
        expect(res.headers['ratelimit-limit']).toBe('100');
        res.on('data', (c: Buffer) => {
          seen.push(c.toString());
          // Each event is written only after the previous one reached the caller.
          if (seen.join('') === 'data: 1\n\n') events!.write('data: 2\n\n');
          else if (seen.join('') === 'data: 1\n\ndata: 2\n\n') {
            req.destroy(); // the caller leaves mid-stream
            resolve();
          }
        });
      });
      req.on('error', (err) => (seen.length >= 2 ? undefined : reject(err)));
    });
    await eventsClosed; // the service's response was closed, not left open
    expect(seen.join('')).toBe('data: 1\n\ndata: 2\n\n');
  });

  it('answers 502 with the limiter headers when the service is unreachable', async () => {
    const dead = net.createServer();
    const deadPort = await listen(dead);
    await closeServer(dead);
    const proxy = gatewayProxy({ upstreams: { ingest: `http://127.0.0.1:${deadPort}`, query: `http://127.0.0.1:${deadPort}` }, resolver, signingKey: KEY, maxBodyBytes: 1024 });
    const gw = http.createServer((req, res) => proxy(req, res, () => undefined, EXTRA));
    const gwPort = await listen(gw);
    try {
      const r = await call(gwPort, '/api/v1/sessions/x', { headers: { 'x-api-key': 'good-key' } });
      expect(r.status).toBe(502);
      expect((JSON.parse(r.body.toString()) as { detail: string }).detail).toMatch(/^Upstream unavailable: connect ECONNREFUSED/);
      expect(r.headers['ratelimit-limit']).toBe('100');
      expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    } finally {
      await closeServer(gw);
    }
  });

  it('answers 502 for a service answer that cannot be relayed or ends early, and closes a streamed answer the service breaks off', async () => {
    const raw = net.createServer((socket) => {
      socket.once('data', (d) => {
        if (d.toString().startsWith('GET /api/v1/sessions/bad')) socket.end('HTTP/1.1 200 OK\r\nx-bad: a\u0001b\r\ncontent-length: 2\r\n\r\nok');
        else {
          const length = d.toString().startsWith('GET /api/v1/sessions/dies-big') ? 1_000_000 : 100;
          socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${length}\r\n\r\npartial`);
          socket.destroy();
        }
      });
      socket.on('error', () => undefined);
    });
    const rawPort = await listen(raw);
    const proxy = gatewayProxy({ upstreams: { ingest: `http://127.0.0.1:${rawPort}`, query: `http://127.0.0.1:${rawPort}` }, resolver, signingKey: KEY, maxBodyBytes: 1024 });
    const gw = http.createServer((req, res) => proxy(req, res, () => undefined));
    const gwPort = await listen(gw);
    try {
      const bad = await call(gwPort, '/api/v1/sessions/bad', { headers: { 'x-api-key': 'good-key' } });
      expect(bad.status).toBe(502);
      expect((JSON.parse(bad.body.toString()) as { detail: string }).detail).toMatch(/^Upstream unavailable: invalid response/);
      // A small answer is read whole before anything is sent: its loss is still a 502.
      const small = await call(gwPort, '/api/v1/sessions/dies', { headers: { 'x-api-key': 'good-key' } });
      expect(small.status).toBe(502);
      expect((JSON.parse(small.body.toString()) as { detail: string }).detail).toBe('Upstream unavailable: aborted');
      // A streamed one (1 MB announced, 7 bytes sent) was under way: the caller's connection is closed, not answered short.
      await expect(call(gwPort, '/api/v1/sessions/dies-big', { headers: { 'x-api-key': 'good-key' } })).rejects.toThrow();
    } finally {
      await closeServer(gw);
      await closeServer(raw);
    }
  });

  routes.set('/sessions/head', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '5' });
    res.end('hello');
  });

  it('relays HEAD with the length of the body it would have, and the connection carries on', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const head = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/sessions/head', method: 'HEAD', headers: { 'x-api-key': 'good-key' }, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res));
        });
        req.on('error', reject);
        req.end();
      });
      expect(head.statusCode).toBe(200);
      expect(head.headers['content-length']).toBe('5');
      const get = await new Promise<string>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port, path: '/api/v1/sessions/head', headers: { 'x-api-key': 'good-key' }, agent }, (res) => {
            let s = '';
            res.on('data', (c: Buffer) => (s += c.toString()));
            res.on('end', () => resolve(s));
          })
          .on('error', reject);
      });
      expect(get).toBe('hello');
    } finally {
      agent.destroy();
    }
  });
});
