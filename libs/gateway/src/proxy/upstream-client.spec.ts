import { createHash, randomBytes } from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import { PassThrough } from 'node:stream';
import { UpstreamPool, type UpstreamRequest, type UpstreamResponseHandler } from './upstream-client';
import { closeServer, listen, uploadDigest } from './proxy.testing';

/** What a handler saw of one exchange. */
interface Answer {
  status: number;
  headers: string[];
  bodyLength: number;
  body: Buffer;
  pieces: number;
}

const header = (a: Answer, name: string) => {
  const i = a.headers.findIndex((h, k) => k % 2 === 0 && h === name);
  return i < 0 ? undefined : a.headers[i + 1];
};

/** Runs one request; `pauseEvery` > 0 answers false to every n-th piece and resumes on the next turn. */
function send(pool: UpstreamPool, req: Partial<UpstreamRequest>, opts: { pauseEvery?: number; onPiece?: (piece: Buffer, n: number) => void } = {}) {
  return new Promise<Answer>((resolve, reject) => {
    const pieces: Buffer[] = [];
    let head: Omit<Answer, 'body' | 'pieces'> | null = null;
    let ended = false;
    const handler: UpstreamResponseHandler = {
      onHead: (status, headers, bodyLength) => {
        expect(head).toBeNull();
        head = { status, headers, bodyLength };
      },
      onData: (chunk) => {
        expect(head).not.toBeNull();
        expect(ended).toBe(false);
        pieces.push(Buffer.from(chunk));
        opts.onPiece?.(chunk, pieces.length);
        if (opts.pauseEvery && pieces.length % opts.pauseEvery === 0) {
          setImmediate(() => exchange.resume());
          return false;
        }
        return true;
      },
      onEnd: () => {
        ended = true;
        resolve({ ...head!, body: Buffer.concat(pieces), pieces: pieces.length });
      },
      onError: (err) => reject(Object.assign(err, { head, received: Buffer.concat(pieces) })),
    };
    const exchange = pool.request({ method: 'GET', path: '/', headerLines: '', bodyKind: 'none', body: null, ...req }, handler);
  });
}


const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('UpstreamPool against node:http servers', () => {
  let server: http.Server;
  let port: number;
  let pool: UpstreamPool;
  /** Sockets (by remote port) that carried requests, in order. */
  let seen: number[];
  const routes = new Map<string, (req: http.IncomingMessage, res: http.ServerResponse) => void>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.socket.remotePort!);
      const route = routes.get(req.url!.split('?')[0]);
      if (route) return route(req, res);
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('no route');
    });
    port = await listen(server);
  });
  afterAll(() => closeServer(server));
  beforeEach(() => {
    seen = [];
    pool = new UpstreamPool('127.0.0.1', port);
  });
  afterEach(() => pool.close());

  routes.set('/echo-head', (req, res) => {
    const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers, raw: req.rawHeaders });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-Mixed-Case': 'v', 'set-cookie': ['a=1', 'b=2'] });
    res.end(body);
  });

  it('sends the head as given and reuses the connection for the next request', async () => {
    const a = await send(pool, { path: '/echo-head?x=1&y=%20', headerLines: 'x-one: 1\r\nx-latin: caf\u00e9\r\n' });
    expect(a.status).toBe(200);
    expect(a.bodyLength).toBe(a.body.length);
    const echoed = JSON.parse(a.body.toString());
    expect(echoed).toMatchObject({ method: 'GET', url: '/echo-head?x=1&y=%20' });
    expect(echoed.headers).toMatchObject({ host: `127.0.0.1:${port}`, connection: 'keep-alive', 'x-one': '1', 'x-latin': 'caf\u00e9' });
    expect(header(a, 'x-mixed-case')).toBe('v');
    expect(a.headers.filter((h, i) => i % 2 === 0 && h === 'set-cookie')).toHaveLength(2);
    expect(pool.idleCount).toBe(1);
    const b = await send(pool, { path: '/echo-head' });
    expect(b.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toBe(seen[0]); // same connection
    expect(pool.open).toBe(1);
  });

  it('opens one connection per concurrent request and keeps them for reuse', async () => {
    const answers = await Promise.all(Array.from({ length: 5 }, () => send(pool, { path: '/echo-head' })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(seen).size).toBe(5);
    expect(pool.idleCount).toBe(5);
    await Promise.all(Array.from({ length: 5 }, () => send(pool, { path: '/echo-head' })));
    expect(new Set(seen).size).toBe(5);
  });

  routes.set('/chunked', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    for (let i = 0; i < 50; i++) res.write(`piece ${i};`);
    res.end('done');
  });

  it('reads a chunked answer and reuses its connection', async () => {
    const a = await send(pool, { path: '/chunked' });
    expect(a.bodyLength).toBe(-1);
    expect(header(a, 'transfer-encoding')).toBe('chunked');
    expect(a.body.toString()).toBe(`${Array.from({ length: 50 }, (_, i) => `piece ${i};`).join('')}done`);
    const b = await send(pool, { path: '/chunked' });
    expect(b.body.equals(a.body)).toBe(true);
    expect(seen[1]).toBe(seen[0]);
  });

  const big = randomBytes(5 * 1024 * 1024 + 17);
  routes.set('/big', (_req, res) => {
    res.writeHead(200, { 'content-length': big.length });
    res.end(big);
  });
  routes.set('/big-chunked', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    let off = 0;
    const more = () => {
      while (off < big.length) {
        const piece = big.subarray(off, off + 100_000);
        off += piece.length;
        if (!res.write(piece)) return res.once('drain', more);
      }
      res.end();
    };
    more();
  });

  it.each(['/big', '/big-chunked'])('streams a large answer (%s) with pauses, intact', async (path) => {
    const a = await send(pool, { path }, { pauseEvery: 3 });
    expect(a.body.length).toBe(big.length);
    expect(sha(a.body)).toBe(sha(big));
    expect(a.pieces).toBeGreaterThan(1);
    expect(pool.idleCount).toBe(1);
  });

  let sse: http.ServerResponse | null = null;
  routes.set('/sse', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('event: one\ndata: 1\n\n');
    sse = res;
  });

  it('hands each SSE event on as it is flushed, before the stream ends', async () => {
    const got: string[] = [];
    const done = send(pool, { path: '/sse' }, {
      onPiece: (piece) => {
        got.push(piece.toString());
        // The next event is only written once the previous one arrived here: no buffering until the end.
        if (got.join('').includes('data: 1\n\n') && got.length === 1) sse!.write('event: two\ndata: 2\n\n');
        else if (got.join('').includes('data: 2\n\n')) sse!.end();
      },
    });
    const a = await done;
    expect(a.body.toString()).toBe('event: one\ndata: 1\n\nevent: two\ndata: 2\n\n');
  });

  routes.set('/upload', uploadDigest(200));

  it('streams a Content-Length request body as is', async () => {
    const payload = randomBytes(3 * 1024 * 1024 + 5);
    const body = new PassThrough();
    const done = send(pool, { method: 'POST', path: '/upload', headerLines: `content-length: ${payload.length}\r\n`, bodyKind: 'length', body });
    for (let off = 0; off < payload.length; off += 65_536) body.write(payload.subarray(off, off + 65_536));
    body.end();
    const a = await done;
    expect(JSON.parse(a.body.toString())).toEqual({ n: payload.length, sha: sha(payload), te: null, cl: String(payload.length) });
    // Reused afterwards: the request was complete.
    await send(pool, { path: '/echo-head' });
    expect(seen[1]).toBe(seen[0]);
  });

  it('sends a body of unknown length chunked (empty writes skipped)', async () => {
    const parts = [Buffer.from('hello '), Buffer.alloc(0), randomBytes(200_000), Buffer.from(' end')];
    const body = new PassThrough();
    const done = send(pool, { method: 'PUT', path: '/upload', bodyKind: 'chunked', body });
    for (const p of parts) body.write(p);
    body.end();
    const a = await done;
    const all = Buffer.concat(parts);
    expect(JSON.parse(a.body.toString())).toEqual({ n: all.length, sha: sha(all), te: 'chunked', cl: null });
    await send(pool, { path: '/echo-head' });
    expect(seen[1]).toBe(seen[0]);
  });

  it('drops the connection when the request body stream breaks off', async () => {
    let started!: () => void;
    const receiving = new Promise<void>((resolve) => (started = resolve));
    const closed = new Promise<boolean>((resolve) =>
      routes.set('/upload-broken', (req) => {
        req.once('data', () => started());
        req.on('close', () => resolve(req.complete));
      }),
    );
    const body = new PassThrough();
    let heard = false;
    pool.request(
      { method: 'POST', path: '/upload-broken', headerLines: 'content-length: 1000\r\n', bodyKind: 'length', body },
      { onHead: () => (heard = true), onData: () => true, onEnd: () => (heard = true), onError: () => (heard = true) },
    );
    body.write(Buffer.alloc(10));
    await receiving; // the service is reading the body
    body.destroy();
    expect(await closed).toBe(false); // the service saw the connection go, not a complete request
    expect(heard).toBe(false); // an aborted exchange reports nothing
    expect(pool.open).toBe(0);
  });

  routes.set('/status', (req, res) => {
    const code = Number(new URL(req.url!, 'http://x').searchParams.get('code'));
    res.writeHead(code, { 'content-length': '0', etag: '"e"' });
    res.end();
  });
  routes.set('/head', (_req, res) => {
    res.writeHead(200, { 'content-length': '100', 'content-type': 'text/plain' });
    res.end(); // HEAD: node sends no body
  });

  it('reads no body for HEAD, 204 and 304, and reuses the connection', async () => {
    const h = await send(pool, { method: 'HEAD', path: '/head' });
    expect([h.status, h.bodyLength, h.body.length, header(h, 'content-length')]).toEqual([200, 0, 0, '100']);
    const n = await send(pool, { path: '/status?code=204' });
    expect([n.status, n.bodyLength, n.body.length]).toEqual([204, 0, 0]);
    const m = await send(pool, { path: '/status?code=304' });
    expect([m.status, m.bodyLength]).toEqual([304, 0]);
    const after = await send(pool, { path: '/echo-head' });
    expect(after.status).toBe(200);
    expect(new Set(seen).size).toBe(1);
  });

  routes.set('/close', (_req, res) => {
    res.writeHead(200, { connection: 'close', 'content-length': '2' });
    res.end('ok');
  });

  it('does not keep a connection the service closes (Connection: close)', async () => {
    const a = await send(pool, { path: '/close' });
    expect(a.body.toString()).toBe('ok');
    expect(pool.idleCount).toBe(0);
    await send(pool, { path: '/echo-head' });
    expect(seen[1]).not.toBe(seen[0]);
  });

  routes.set('/hint', (_req, res) => {
    res.writeHead(200, { 'keep-alive': 'timeout=1', 'content-length': '2' });
    res.end('ok');
  });

  it('does not keep a connection whose Keep-Alive timeout leaves no time to reuse it', async () => {
    await send(pool, { path: '/hint' });
    expect(pool.idleCount).toBe(0);
  });

  routes.set('/die', (_req, res) => {
    res.writeHead(200, { 'content-length': '1000' });
    res.write('partial', () => res.socket?.destroy());
  });
  routes.set('/die-chunked', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('partial', () => res.socket?.destroy());
  });

  it.each(['/die', '/die-chunked'])('reports a service that dies mid-answer (%s) as an error after the head', async (path) => {
    const err = (await send(pool, { path }).catch((e: unknown) => e)) as Error & { head: unknown; received: Buffer };
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toBe('aborted');
    expect(err.head).toMatchObject({ status: 200 });
    expect(err.received.toString()).toBe('partial');
    expect(pool.open).toBe(0);
  });

  it('aborting an exchange closes its connection at the service', async () => {
    const closed = new Promise<void>((resolve) =>
      routes.set('/hold', (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: x\n\n');
        res.on('close', () => resolve());
      }),
    );
    const ex = pool.request({ method: 'GET', path: '/hold', headerLines: '', bodyKind: 'none', body: null }, {
      onHead: () => undefined,
      onData: () => {
        ex.abort();
        return true;
      },
      onEnd: () => undefined,
      onError: () => undefined,
    });
    await closed;
    expect(pool.idleCount).toBe(0);
  });
});

describe('UpstreamPool against raw TCP services', () => {
  const servers: net.Server[] = [];
  const pools: UpstreamPool[] = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) p.close();
    for (const s of servers.splice(0)) await closeServer(s);
  });

  /** A service that answers each connection with `reply(requestHead, connectionIndex, requestIndex)`. */
  async function raw(reply: (socket: net.Socket, conn: number, n: number) => void): Promise<{ pool: UpstreamPool; connections: () => number }> {
    let conns = 0;
    const server = net.createServer((socket) => {
      const conn = conns++;
      let buf = '';
      let n = 0;
      socket.on('data', (d) => {
        buf += d.toString('latin1');
        while (buf.includes('\r\n\r\n')) {
          buf = buf.slice(buf.indexOf('\r\n\r\n') + 4);
          reply(socket, conn, n++);
        }
      });
      socket.on('error', () => undefined);
    });
    servers.push(server);
    const port = await listen(server);
    const pool = new UpstreamPool('127.0.0.1', port);
    pools.push(pool);
    return { pool, connections: () => conns };
  }

  async function trickle(socket: net.Socket, text: string): Promise<void> {
    for (const ch of text) {
      socket.write(ch, 'latin1');
      await new Promise((r) => setImmediate(r));
    }
  }

  it('skips 1xx answers before the final one', async () => {
    const { pool } = await raw((s) =>
      s.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 2\r\nx-final: 1\r\n\r\nok'),
    );
    const a = await send(pool, {});
    expect(a.status).toBe(201);
    expect(a.headers).toEqual(['content-length', '2', 'x-final', '1']);
    expect(a.body.toString()).toBe('ok');
    expect(pool.idleCount).toBe(1);
  });

  it('reads a close-delimited body to the end and does not keep the connection', async () => {
    const { pool } = await raw((s) => {
      s.write('HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nhello ');
      s.end('world');
    });
    const a = await send(pool, {});
    expect([a.status, a.bodyLength, a.body.toString()]).toEqual([200, -1, 'hello world']);
    expect(pool.idleCount).toBe(0);
  });

  it('parses an answer split into single bytes: chunk extensions, trailers, obs-fold, HTTP/1.0 keep-alive', async () => {
    const { pool, connections } = await raw((s, _c, n) => {
      if (n === 0)
        void trickle(s, 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Folded: a\r\n  b\r\n\r\n5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-trailer: t\r\n\r\n');
      else s.write('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\n\r\nabc');
    });
    const a = await send(pool, {});
    expect(a.body.toString()).toBe('helloabcdefghijklmnopqrstuvwxyz');
    expect(a.headers).toEqual(['transfer-encoding', 'chunked', 'x-folded', 'a b']);
    const b = await send(pool, {});
    expect(b.body.toString()).toBe('abc');
    expect(pool.idleCount).toBe(1);
    expect(connections()).toBe(1);
  });

  it('does not keep a connection that sent more than the answer', async () => {
    const { pool } = await raw((s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA'));
    const a = await send(pool, {});
    expect(a.body.toString()).toBe('ok');
    expect(pool.idleCount).toBe(0);
  });

  it.each([
    ['a bad status line', 'HTTP/2 200\r\n\r\n'],
    ['a bad header line', 'HTTP/1.1 200 OK\r\nno colon here\r\n\r\n'],
    ['conflicting lengths', 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 3\r\n\r\nok'],
    ['a bad chunk size', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n'],
  ])('fails on %s', async (_what, answer) => {
    const { pool } = await raw((s) => s.write(answer));
    await expect(send(pool, {})).rejects.toThrow(/^Parse Error/);
    expect(pool.open).toBe(0);
  });

  it('fails on a head larger than the limit', async () => {
    const { pool } = await raw((s) => s.write(`HTTP/1.1 200 OK\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`));
    await expect(send(pool, {})).rejects.toThrow('Parse Error: response head too large');
  });

  it('retries a bodyless idempotent request once on a new connection when a reused one was closed', async () => {
    // The first connection answers one request, then closes when the next arrives (an idle timeout race).
    const { pool, connections } = await raw((s, conn, n) => {
      if (conn === 0 && n > 0) return s.destroy();
      s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
    });
    expect((await send(pool, {})).body.toString()).toBe('ok');
    expect(pool.idleCount).toBe(1);
    expect((await send(pool, { method: 'GET' })).body.toString()).toBe('ok');
    expect(connections()).toBe(2);
  });

  it('does not retry a POST, nor a request on a new connection', async () => {
    const { pool } = await raw((s, conn, n) => {
      if (conn === 0 && n === 0) return s.write('HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok');
      s.destroy();
    });
    await send(pool, {});
    await expect(send(pool, { method: 'POST' })).rejects.toThrow('socket hang up');
    await expect(send(pool, { method: 'GET' })).rejects.toThrow('socket hang up');
  });

  it('fails with the connect error when nothing listens', async () => {
    const server = net.createServer();
    const port = await listen(server);
    await closeServer(server);
    const pool = new UpstreamPool('127.0.0.1', port);
    pools.push(pool);
    await expect(send(pool, {})).rejects.toThrow(/ECONNREFUSED/);
  });

  it('connects to an IPv6 literal and names it bracketed in Host', async () => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-length': Buffer.byteLength(req.headers.host!) });
      res.end(req.headers.host);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    const pool = new UpstreamPool('[::1]', port);
    pools.push(pool);
    expect((await send(pool, {})).body.toString()).toBe(`[::1]:${port}`);
  });

  it('close() ends the idle connections', async () => {
    const { pool } = await raw((s) => s.write('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'));
    await send(pool, {});
    expect(pool.idleCount).toBe(1);
    pool.close();
    expect(pool.idleCount).toBe(0);
    expect(pool.open).toBe(0);
  });
});
