import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import net from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CallerVerdict } from './deployment-callers';
import { FRONT_PROXY_LIMITS, FrontProxy } from './front-proxy';

// The proxy's transport semantics against real HTTP servers on 127.0.0.1 (the agent server's own behaviour through
// the proxy is covered by apps/standalone/src/deployment-address.e2e.spec.ts).

/** The transport tests: every caller is let through (the credential check has its own test below). */
const allowAll = async (): Promise<CallerVerdict> => ({ ok: true });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** An upstream that records what it is asked and can hold answers open; `closed` counts requests whose client left. */
interface Upstream {
  port: number;
  seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[];
  closed: number;
  connections(): Promise<number>;
  close(): Promise<void>;
}

async function startUpstream(name: string): Promise<Upstream> {
  const u: Upstream = { port: 0, seen: [], closed: 0, connections: async () => 0, close: async () => undefined };
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      u.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.once('close', () => {
        if (!res.writableFinished) u.closed++;
      });
      if (req.url === '/stream') {
        // an event stream that has said nothing yet: its headers go out at once
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.flushHeaders();
      } else if (req.url === '/hold') {
        // a long wait before any answer (as runs/wait)
      } else if (req.url === '/die') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
        setTimeout(() => res.socket?.destroy(), 50);
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'x-served-by': name }).end(JSON.stringify({ name, body: Buffer.concat(chunks).toString() }));
      }
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  u.port = (server.address() as AddressInfo).port;
  u.connections = () => new Promise((r, j) => server.getConnections((err, n) => (err ? j(err) : r(n))));
  u.close = () => {
    for (const s of sockets) s.destroy();
    return new Promise((r) => server.close(() => r()));
  };
  return u;
}

/** A raw client request that resolves once its response's headers have arrived (or, with `headers` false, once sent). */
function rawRequest(port: number, path: string, headers = true): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
      if (!headers) resolve(s);
    });
    let head = '';
    s.on('data', (b: Buffer) => {
      head += b.toString('latin1');
      if (headers && head.includes('\r\n\r\n')) resolve(s);
    });
    s.on('error', reject);
    setTimeout(() => reject(new Error(`no answer to ${path}`)), 5000).unref();
  });
}

describe('FrontProxy', () => {
  let a: Upstream;
  let b: Upstream;
  let proxy: FrontProxy;
  let port: number;
  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  beforeEach(async () => {
    a = await startUpstream('a');
    b = await startUpstream('b');
    proxy = new FrontProxy(allowAll);
    port = await proxy.listen('127.0.0.1', 0);
    proxy.point({ port: a.port });
  });
  afterEach(async () => {
    await proxy.close();
    await a.close();
    await b.close();
  });

  it('answers 503 before a revision is deployed and 502 when the revision cannot be reached', async () => {
    proxy.point(null);
    const none = await fetch(url('/ok'));
    expect([none.status, await none.json()]).toEqual([503, { detail: 'No revision is deployed yet' }]);
    const gone = await startUpstream('gone');
    await gone.close();
    proxy.point({ port: gone.port });
    const down = await fetch(url('/ok'), { method: 'POST', body: 'x'.repeat(100_000) });
    expect(down.status).toBe(502);
    expect(((await down.json()) as { detail: string }).detail).toMatch(/^agent server unavailable/);
  });

  it('forwards method, path, query, end-to-end headers and the body; not hop-by-hop headers', async () => {
    // node:http, since fetch refuses to send a Connection header
    const res = await new Promise<{ headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.request(url('/threads/t1/runs?x=1'), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-custom': 'kept', connection: 'keep-alive, x-hop', 'x-hop': 'dropped' },
      });
      req.on('response', (r) => {
        let body = '';
        r.on('data', (c: Buffer) => (body += c.toString()));
        r.on('end', () => resolve({ headers: r.headers, body }));
      });
      req.on('error', reject);
      req.end('{"input":1}');
    });
    expect(res.headers['x-served-by']).toBe('a');
    expect(JSON.parse(res.body)).toEqual({ name: 'a', body: '{"input":1}' });
    expect(a.seen[0]).toMatchObject({ method: 'POST', url: '/threads/t1/runs?x=1', headers: { 'content-type': 'application/json', 'x-custom': 'kept' } });
    expect(a.seen[0].headers['x-hop']).toBeUndefined();
    // a chunked body (no Content-Length) arrives whole
    const chunked = await new Promise<string>((resolve, reject) => {
      const req = http.request(url('/echo'), { method: 'PUT' }, (r) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString()));
        r.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.write('one,');
      setTimeout(() => req.end('two'), 20);
    });
    expect(JSON.parse(chunked)).toEqual({ name: 'a', body: 'one,two' });
  });

  it('sends an event stream its headers at once, before any event', async () => {
    const s = await rawRequest(port, '/stream');
    s.destroy();
  });

  it('a client that leaves, before the answer or during a stream, has its upstream request closed', async () => {
    const waiting = await rawRequest(port, '/hold', false);
    const streaming = await rawRequest(port, '/stream');
    await until('both upstream requests', () => a.seen.length === 2);
    waiting.destroy();
    streaming.destroy();
    await until('the upstream to see both clients leave', () => a.closed === 2, 5000);
  });

  it('an upstream that dies mid-answer cuts the client off (not a short answer that looks whole)', async () => {
    const res = await fetch(url('/die'), { signal: AbortSignal.timeout(5000) });
    expect(res.status).toBe(200);
    const t0 = Date.now();
    await expect(res.text()).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(2000); // cut off, not given up on by the client's own timeout
  });

  it('100 abandoned streams and 100 abandoned waits: /ok still answers at once and no upstream connection is left open', async () => {
    const clients: net.Socket[] = [];
    for (let i = 0; i < 100; i++) clients.push(await rawRequest(port, '/stream'));
    for (let i = 0; i < 100; i++) clients.push(await rawRequest(port, '/hold', false));
    await until('200 upstream requests', () => a.seen.length === 200);
    expect(await a.connections()).toBeGreaterThanOrEqual(200);
    for (const c of clients) c.destroy();
    const t0 = Date.now();
    const ok = await fetch(url('/ok'), { signal: AbortSignal.timeout(5000) });
    expect(ok.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2000); // the machine may be busy: before, it never answered
    await until('the upstream connections to close', async () => (await a.connections()) <= 1, 5000); // the one kept alive for /ok
    expect(a.closed).toBe(200);
  });

  it('streams held open never queue other requests (no socket cap)', async () => {
    const held: net.Socket[] = [];
    for (let i = 0; i < 100; i++) held.push(await rawRequest(port, '/stream'));
    const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(url('/ok'), { signal: AbortSignal.timeout(5000) }).then((r) => r.status)));
    expect(answers).toEqual(Array(20).fill(200));
    for (const h of held) h.destroy();
  });

  it('after a switch, every request goes to the new revision, over the same kept-alive client connection too', async () => {
    const held: net.Socket[] = [];
    for (let i = 0; i < 100; i++) held.push(await rawRequest(port, '/stream'));
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<string>((resolve, reject) => {
        http.get(url('/who'), { agent }, (r) => {
          let text = '';
          r.on('data', (c: Buffer) => (text += c.toString()));
          r.on('end', () => resolve((JSON.parse(text) as { name: string }).name));
        }).on('error', reject);
      });
    expect(await get()).toBe('a');
    proxy.point({ port: b.port });
    const served = [];
    for (let i = 0; i < 20; i++) served.push(await get());
    expect(served).toEqual(Array(20).fill('b'));
    expect(a.seen.filter((s) => s.url === '/who')).toHaveLength(1);
    agent.destroy();
    for (const h of held) h.destroy();
  });

  it('cuts off a client that is slow to send its headers, but not an answer that takes longer than a request may', async () => {
    const quick = new FrontProxy(allowAll, { ...FRONT_PROXY_LIMITS, headersTimeoutMs: 300, requestTimeoutMs: 600, checkIntervalMs: 100 });
    const quickPort = await quick.listen('127.0.0.1', 0);
    quick.point({ port: a.port });
    try {
      const slow = net.connect(quickPort, '127.0.0.1', () => slow.write('GET /ok HTTP/1.1\r\nHost: x\r\n'));
      const t0 = Date.now();
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        slow.on('data', (b: Buffer) => (text += b.toString()));
        slow.on('close', () => resolve(text));
      });
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      expect(Date.now() - t0).toBeLessThan(3000);
      // a stream, and a wait with no answer yet, open longer than requestTimeoutMs stay open
      const open = [await rawRequest(quickPort, '/stream'), await rawRequest(quickPort, '/hold', false)];
      let closed = 0;
      for (const s of open) s.once('close', () => closed++);
      await sleep(1200);
      expect(closed).toBe(0);
      for (const s of open) s.destroy();
    } finally {
      await quick.close();
    }
  });

  it('serves at most maxConnections clients at once; a freed slot serves again', async () => {
    const small = new FrontProxy(allowAll, { ...FRONT_PROXY_LIMITS, maxConnections: 5 });
    const smallPort = await small.listen('127.0.0.1', 0);
    small.point({ port: a.port });
    try {
      const held: net.Socket[] = [];
      for (let i = 0; i < 5; i++) held.push(await rawRequest(smallPort, '/stream'));
      await expect(fetch(`http://127.0.0.1:${smallPort}/ok`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow('fetch failed');
      held.pop()?.destroy();
      await sleep(100);
      expect((await fetch(`http://127.0.0.1:${smallPort}/ok`, { signal: AbortSignal.timeout(2000) })).status).toBe(200);
      for (const h of held) h.destroy();
    } finally {
      await small.close();
    }
  });
  it('forwards only callers the check lets through (GET /ok open), with nothing forwarded otherwise and the key not passed on', async () => {
    const checked: string[] = [];
    const guarded = new FrontProxy(async (headers) => {
      checked.push(String(headers['x-api-key'] ?? headers.authorization ?? ''));
      if (headers['x-api-key'] === 'good' || headers.authorization === 'Bearer good') return { ok: true };
      return headers['x-api-key'] === 'other' ? { ok: false, status: 403, detail: 'other workspace' } : { ok: false, status: 401, detail: 'no key' };
    });
    const gPort = await guarded.listen('127.0.0.1', 0);
    guarded.point({ port: a.port });
    try {
      const at = (path: string, init: RequestInit = {}) => fetch(`http://127.0.0.1:${gPort}${path}`, init);
      expect((await at('/ok')).status).toBe(200);
      expect((await at('/ok?x=1', { method: 'HEAD' })).status).toBe(200);
      expect(checked).toEqual([]);
      const before = a.seen.length;
      const none = await at('/threads', { method: 'POST', body: '{}' });
      expect([none.status, await none.json()]).toEqual([401, { detail: 'no key' }]);
      const other = await at('/threads', { method: 'POST', body: '{}', headers: { 'x-api-key': 'other' } });
      expect([other.status, await other.json()]).toEqual([403, { detail: 'other workspace' }]);
      expect((await at('/ok/../threads', { headers: { 'x-api-key': 'bad' } })).status).toBe(401);
      expect(a.seen.length).toBe(before); // nothing reached the server
      const ok = await at('/threads', { method: 'POST', body: '{"a":1}', headers: { 'x-api-key': 'good', authorization: 'Basic app-auth' } });
      expect(((await ok.json()) as { body: string }).body).toBe('{"a":1}');
      expect(a.seen.at(-1)?.headers['x-api-key']).toBeUndefined();
      expect(a.seen.at(-1)?.headers.authorization).toBe('Basic app-auth'); // the app's own header, not the key
      expect((await at('/threads', { headers: { authorization: 'Bearer good' } })).status).toBe(200);
      expect(a.seen.at(-1)?.headers.authorization).toBeUndefined();
    } finally {
      await guarded.close();
    }
  });

  it('forwards to a server on a unix socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'front-sock-'));
    const server = http.createServer((req, res) => res.end(`socket ${req.url}`));
    await new Promise<void>((r) => server.listen(join(dir, 'agent.sock'), r));
    try {
      proxy.point({ socketPath: join(dir, 'agent.sock') });
      expect(await (await fetch(url('/threads?x=1'))).text()).toBe('socket /threads?x=1');
    } finally {
      await new Promise((r) => server.close(r));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
