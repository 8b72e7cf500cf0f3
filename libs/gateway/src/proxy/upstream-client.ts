import * as net from 'node:net';

/**
 * The gateway's HTTP/1.1 client for its upstream services: keep-alive connections on node:net sockets,
 * pooled per upstream (the most recently used first), the request head written as one string, and a
 * small response parser (Content-Length, chunked and close-delimited bodies; 1xx answers skipped; no
 * body for HEAD, 204 and 304). It does per request a fraction of what node:http's ClientRequest, Agent
 * and IncomingMessage do (objects, listeners, streams), which is most of the proxy hop's CPU.
 *
 * Request bodies stream from the caller's request (a Content-Length body as is, any other as chunked),
 * with backpressure both ways. A response streams to the handler as it arrives (SSE keeps flowing).
 * A bodyless idempotent request that fails on a reused connection before any byte of an answer is
 * retried once on a new connection (the service may have closed the idle connection meanwhile).
 */

/** How the request body is sent: none, as is (the caller's Content-Length header is forwarded), or chunked. */
export type RequestBodyKind = 'none' | 'length' | 'chunked';

/** The parts of the caller's request body stream the client uses (an http.IncomingMessage). */
export interface RequestBody {
  on(event: 'data', listener: (chunk: Buffer) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  removeListener(event: string, listener: (...args: never[]) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}

export interface UpstreamRequest {
  method: string;
  /** The request target (path and query), already validated (no spaces or control characters). */
  path: string;
  /** Header lines `name: value\r\n` (latin1), without Host, Connection and Transfer-Encoding. */
  headerLines: string;
  bodyKind: RequestBodyKind;
  body: RequestBody | null;
}

export interface UpstreamResponseHandler {
  /**
   * The final answer's status and headers as a flat list [name, value, ...] (names lower-cased, in the
   * order received, repeated names repeated). `bodyLength`: the body's length when known in advance
   * (Content-Length; 0 for HEAD, 204 and 304), -1 when it is chunked or ends with the connection.
   */
  onHead(status: number, headers: string[], bodyLength: number): void;
  /** A piece of the body; false asks for a pause until `resume()` of the exchange. */
  onData(chunk: Buffer): boolean;
  onEnd(): void;
  /** The exchange failed (before or after the head); called at most once, and never after onEnd. */
  onError(err: Error): void;
}

export interface UpstreamPoolOptions {
  /** Idle connections kept (the most recently used are reused first). Default 256. */
  maxIdle?: number;
  /** An idle connection is closed after this long (or 1 s before the service's Keep-Alive timeout). Default 4 s. */
  idleTimeoutMs?: number;
  /** Connecting longer than this fails the request. Default 10 s. */
  connectTimeoutMs?: number;
  /** A response head larger than this is a parse error (node:http's default limit). Default 16 KiB. */
  maxHeaderBytes?: number;
}

const CRLF2 = Buffer.from('\r\n\r\n', 'latin1');
const MAX_CHUNK_LINE = 4096;
const RETRIABLE = new Set(['GET', 'HEAD', 'OPTIONS', 'DELETE', 'PUT', 'TRACE']);

function codedError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}
const parseError = (reason: string) => codedError(`Parse Error: ${reason}`, 'HPE_INVALID_RESPONSE');

/** Leading and trailing spaces and tabs (String#trim would also strip obs-text such as 0xA0). */
function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 32 || s.charCodeAt(a) === 9)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 32 || s.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/** Whether a comma-separated header value lists `token` (case-insensitive). */
function listsToken(value: string, token: string): boolean {
  const v = value.toLowerCase();
  if (v === token) return true;
  for (const part of v.split(',')) if (trimOws(part) === token) return true;
  return false;
}

const enum State {
  Head,
  Length,
  Close,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailers,
  Done,
}

/** One pooled connection. Its listeners stay for its whole life and hand events to the current exchange. */
class Connection {
  exchange: Exchange | null = null;
  /** Served an exchange already (a failure on it may be a connection the service closed while idle). */
  used = false;
  idleSince = 0;
  timeoutMs: number;
  paused = false;
  dead = false;

  constructor(
    readonly pool: UpstreamPool,
    readonly socket: net.Socket,
  ) {
    this.timeoutMs = pool.idleTimeoutMs;
    socket.on('data', (chunk: Buffer) => {
      if (this.exchange !== null) this.exchange.onData(chunk);
      else this.destroy(); // bytes nobody asked for: the connection's framing is lost
    });
    socket.on('end', () => {
      if (this.exchange !== null) this.exchange.onEof();
      this.destroy();
    });
    socket.on('error', (err: Error) => {
      if (this.exchange !== null) this.exchange.fail(err);
      this.destroy();
    });
    socket.on('close', () => {
      if (this.exchange !== null) this.exchange.fail(codedError('socket hang up', 'ECONNRESET'));
      this.destroy();
    });
    socket.on('drain', () => this.exchange?.onDrain());
  }

  pause(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  destroy(): void {
    if (this.dead) return;
    this.dead = true;
    this.pool.forget(this);
    this.socket.destroy();
  }
}

/** One request and its answer. */
class Exchange {
  private conn: Connection | null = null;
  private state = State.Head;
  private pending: Buffer | null = null;
  private remaining = 0;
  private keepAlive = true;
  /** Any byte of an answer arrived (a failure after that is never retried). */
  private received = false;
  private requestDone = false;
  private retried = false;
  private bodyEnded = false;
  private bodyPaused = false;
  finished = false;
  private readonly head: string;
  private readonly isHead: boolean;
  private readonly onBodyData: ((chunk: Buffer) => void) | null = null;
  private readonly onBodyEnd: (() => void) | null = null;
  private readonly onBodyClose: (() => void) | null = null;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly req: UpstreamRequest,
    private readonly handler: UpstreamResponseHandler,
  ) {
    const te = req.bodyKind === 'chunked' ? 'transfer-encoding: chunked\r\n' : '';
    this.head = `${req.method} ${req.path} HTTP/1.1\r\nhost: ${pool.hostHeader}\r\nconnection: keep-alive\r\n${req.headerLines}${te}\r\n`;
    this.isHead = req.method === 'HEAD';
    if (req.bodyKind !== 'none' && req.body !== null) {
      this.onBodyData = (chunk) => this.writeBody(chunk);
      this.onBodyEnd = () => this.endBody();
      this.onBodyClose = () => {
        if (!this.bodyEnded) this.abort();
      };
    }
  }

  start(conn: Connection): void {
    this.conn = conn;
    conn.exchange = this;
    conn.socket.write(this.head, 'latin1');
    const body = this.req.body;
    if (this.onBodyData === null || body === null) {
      this.requestDone = true;
      return;
    }
    body.on('data', this.onBodyData);
    body.on('end', this.onBodyEnd!);
    body.on('close', this.onBodyClose!);
  }

  /** Resumes the answer after onData returned false. */
  resume(): void {
    this.conn?.resume();
  }

  /** Drops the exchange and its connection (the caller went away); the handler hears nothing more. */
  abort(): void {
    if (this.finished) return;
    this.finished = true;
    this.detachBody();
    const conn = this.conn;
    this.conn = null;
    if (conn !== null) {
      conn.exchange = null;
      conn.destroy();
    }
  }

  private writeBody(chunk: Buffer): void {
    const conn = this.conn;
    if (this.finished || conn === null || chunk.length === 0) return;
    const socket = conn.socket;
    let ok: boolean;
    if (this.req.bodyKind === 'chunked') {
      socket.cork();
      socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1');
      socket.write(chunk);
      ok = socket.write('\r\n', 'latin1');
      socket.uncork();
    } else ok = socket.write(chunk);
    if (!ok && !this.bodyPaused) {
      this.bodyPaused = true;
      this.req.body!.pause();
    }
  }

  private endBody(): void {
    this.bodyEnded = true;
    if (this.finished || this.conn === null) return;
    if (this.req.bodyKind === 'chunked') this.conn.socket.write('0\r\n\r\n', 'latin1');
    this.requestDone = true;
    this.detachBody();
  }

  onDrain(): void {
    if (!this.bodyPaused) return;
    this.bodyPaused = false;
    this.req.body?.resume();
  }

  private detachBody(): void {
    const body = this.req.body;
    if (body === null || this.onBodyData === null) return;
    body.removeListener('data', this.onBodyData);
    body.removeListener('end', this.onBodyEnd!);
    body.removeListener('close', this.onBodyClose!);
    // What the service no longer reads is drained, so the caller's connection can carry on.
    if (!this.bodyEnded) body.resume();
  }

  onEof(): void {
    if (this.finished) return;
    if (this.state === State.Close) {
      this.keepAlive = false;
      this.complete(false);
      return;
    }
    this.fail(this.received ? codedError('aborted', 'ECONNRESET') : codedError('socket hang up', 'ECONNRESET'));
  }

  /** The connection failed: retried once when nothing can have reached the service twice, else reported. */
  fail(err: Error): void {
    if (this.finished) return;
    const conn = this.conn;
    this.conn = null;
    if (conn !== null) {
      conn.exchange = null;
      conn.destroy();
    }
    if (!this.received && !this.retried && conn !== null && conn.used && this.req.bodyKind === 'none' && RETRIABLE.has(this.req.method)) {
      this.retried = true;
      this.start(this.pool.connect());
      return;
    }
    this.finished = true;
    this.detachBody();
    this.handler.onError(err);
  }

  onData(chunk: Buffer): void {
    if (this.finished) return;
    this.received = true;
    let buf = chunk;
    if (this.pending !== null) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let i = 0;
    const n = buf.length;
    while (i < n && !this.finished) {
      switch (this.state) {
        case State.Head: {
          const end = buf.indexOf(CRLF2, i);
          if (end < 0 || end - i > this.pool.maxHeaderBytes) {
            if (n - i > this.pool.maxHeaderBytes) return this.fail(parseError('response head too large'));
            this.pending = buf.subarray(i);
            return;
          }
          const start = i;
          i = end + 4;
          if (!this.parseHead(buf.toString('latin1', start, end))) return;
          if ((this.state as State) === State.Done) this.complete(i < n);
          break;
        }
        case State.Length:
        case State.ChunkData: {
          const take = Math.min(this.remaining, n - i);
          const piece = buf.subarray(i, i + take);
          i += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            if (this.state === State.ChunkData) this.state = State.ChunkEnd;
            else this.state = State.Done;
          }
          this.deliver(piece);
          if (this.state === State.Done && !this.finished) this.complete(i < n);
          break;
        }
        case State.Close: {
          const piece = i === 0 ? buf : buf.subarray(i);
          i = n;
          this.deliver(piece);
          break;
        }
        case State.ChunkSize:
        case State.ChunkEnd:
        case State.Trailers: {
          const nl = buf.indexOf(10, i);
          if (nl < 0) {
            if (n - i > MAX_CHUNK_LINE) return this.fail(parseError('chunk line too long'));
            this.pending = buf.subarray(i);
            return;
          }
          const lineEnd = nl > i && buf[nl - 1] === 13 ? nl - 1 : nl;
          const line = buf.toString('latin1', i, lineEnd);
          i = nl + 1;
          if (this.state === State.ChunkEnd) {
            if (line !== '') return this.fail(parseError('chunk not followed by CRLF'));
            this.state = State.ChunkSize;
          } else if (this.state === State.Trailers) {
            if (line === '') {
              this.state = State.Done;
              this.complete(i < n);
            }
          } else {
            const semi = line.indexOf(';');
            const hex = trimOws(semi < 0 ? line : line.slice(0, semi));
            if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) return this.fail(parseError('invalid chunk size'));
            const size = parseInt(hex, 16);
            if (size === 0) this.state = State.Trailers;
            else {
              this.remaining = size;
              this.state = State.ChunkData;
            }
          }
          break;
        }
        case State.Done:
          i = n;
          break;
      }
    }
  }

  private deliver(piece: Buffer): void {
    if (piece.length === 0) return;
    if (!this.handler.onData(piece) && !this.finished) this.conn?.pause();
  }

  /** Parses a head; false when the exchange failed. Skips 1xx answers (the parser then waits for the next head). */
  private parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const status0 = lines[0];
    if (status0.length < 12 || !status0.startsWith('HTTP/1.') || status0.charCodeAt(8) !== 32 || (status0.length > 12 && status0.charCodeAt(12) !== 32)) {
      this.fail(parseError('invalid status line'));
      return false;
    }
    const http10 = status0.charCodeAt(7) === 48;
    const status = Number(status0.slice(9, 12));
    if (!Number.isInteger(status) || status < 100) {
      this.fail(parseError('invalid status code'));
      return false;
    }
    if (status < 200) {
      if (status === 101) {
        this.fail(parseError('unexpected protocol switch'));
        return false;
      }
      return true; // 100 Continue, 102, 103: the final answer follows
    }
    const headers: string[] = [];
    let contentLength = -1;
    let chunked = false;
    let transferEncoding = false;
    let keepAlive = !http10;
    for (let k = 1; k < lines.length; k++) {
      const line = lines[k];
      const c0 = line.charCodeAt(0);
      if (c0 === 32 || c0 === 9) {
        // obs-fold: a continuation of the previous value
        if (headers.length === 0) {
          this.fail(parseError('invalid header line'));
          return false;
        }
        headers[headers.length - 1] += ` ${trimOws(line)}`;
        continue;
      }
      const colon = line.indexOf(':');
      if (colon <= 0 || line.charCodeAt(colon - 1) === 32 || line.charCodeAt(colon - 1) === 9) {
        this.fail(parseError('invalid header line'));
        return false;
      }
      const name = line.slice(0, colon).toLowerCase();
      const value = trimOws(line.slice(colon + 1));
      headers.push(name, value);
      switch (name) {
        case 'content-length': {
          const len = /^\d{1,15}$/.test(value) ? Number(value) : NaN;
          if (Number.isNaN(len) || (contentLength >= 0 && len !== contentLength)) {
            this.fail(parseError('invalid content-length'));
            return false;
          }
          contentLength = len;
          break;
        }
        case 'transfer-encoding': {
          transferEncoding = true;
          const v = value.toLowerCase();
          const last = v.slice(v.lastIndexOf(',') + 1);
          chunked = trimOws(last) === 'chunked';
          break;
        }
        case 'connection':
          if (listsToken(value, 'close')) keepAlive = false;
          else if (http10 && listsToken(value, 'keep-alive')) keepAlive = true;
          break;
        case 'keep-alive': {
          const m = /(?:^|[\s,])timeout=(\d+)/i.exec(value);
          if (m && this.conn !== null) this.conn.timeoutMs = Math.min(this.pool.idleTimeoutMs, Number(m[1]) * 1000 - 1000);
          break;
        }
      }
    }
    let bodyLength: number;
    if (this.isHead || status === 204 || status === 304) {
      bodyLength = 0;
      this.state = State.Done;
    } else if (transferEncoding) {
      bodyLength = -1;
      if (chunked) this.state = State.ChunkSize;
      else {
        this.state = State.Close;
        keepAlive = false;
      }
      if (contentLength >= 0) keepAlive = false; // both framings: trust the chunks, never reuse the connection
    } else if (contentLength >= 0) {
      bodyLength = contentLength;
      this.remaining = contentLength;
      this.state = contentLength === 0 ? State.Done : State.Length;
    } else {
      bodyLength = -1;
      this.state = State.Close;
      keepAlive = false;
    }
    this.keepAlive = keepAlive;
    this.handler.onHead(status, headers, bodyLength);
    return !this.finished;
  }

  /** The answer is complete: the connection goes back to the pool when it can carry another exchange. */
  private complete(leftover: boolean): void {
    if (this.finished) return;
    this.finished = true;
    const conn = this.conn;
    this.conn = null;
    const reusable = this.keepAlive && this.requestDone && !leftover;
    if (!this.requestDone) this.detachBody();
    if (conn !== null) {
      conn.exchange = null;
      if (reusable) this.pool.release(conn);
      else conn.destroy();
    }
    this.handler.onEnd();
  }
}

/** The handle of one request in flight. */
export interface UpstreamExchange {
  /** Resumes the answer after the handler's onData returned false. */
  resume(): void;
  /** Drops the request and its connection; the handler hears nothing more. */
  abort(): void;
}

/** Keep-alive connections to one upstream (http://hostname:port). */
export class UpstreamPool {
  readonly maxIdle: number;
  readonly idleTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxHeaderBytes: number;
  /** The Host header the service gets (node:http's form: the port unless it is 80). */
  readonly hostHeader: string;
  /** Idle connections, the oldest first; taken from the end. */
  private readonly idle: Connection[] = [];
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  /** Connections open now (idle or busy); for tests and diagnostics. */
  open = 0;

  constructor(
    readonly hostname: string,
    readonly port: number,
    opts: UpstreamPoolOptions = {},
  ) {
    this.maxIdle = opts.maxIdle ?? 256;
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 4_000;
    this.connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
    this.maxHeaderBytes = opts.maxHeaderBytes ?? 16 * 1024;
    this.hostHeader = port === 80 ? hostname : `${hostname}:${port}`;
    this.sweeper = setInterval(() => this.sweep(Date.now()), Math.max(250, Math.min(1_000, this.idleTimeoutMs / 2)));
    this.sweeper.unref();
  }

  /** Idle connections now. */
  get idleCount(): number {
    return this.idle.length;
  }

  request(req: UpstreamRequest, handler: UpstreamResponseHandler): UpstreamExchange {
    const exchange = new Exchange(this, req, handler);
    exchange.start(this.acquire());
    return exchange;
  }

  /** Closes the idle connections and every later one once its exchange ends. */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const conn of this.idle.splice(0)) conn.destroy();
  }

  private acquire(): Connection {
    const now = Date.now();
    for (let conn = this.idle.pop(); conn !== undefined; conn = this.idle.pop()) {
      const socket = conn.socket;
      if (conn.dead || socket.destroyed || socket.readableEnded || now - conn.idleSince >= conn.timeoutMs) {
        conn.destroy();
        continue;
      }
      socket.ref();
      return conn;
    }
    return this.connect();
  }

  /** A new connection (the head written before it connects waits in the socket). */
  connect(): Connection {
    // An IPv6 literal comes bracketed from a URL: the brackets stay in the Host header only.
    const host = this.hostname.startsWith('[') ? this.hostname.slice(1, -1) : this.hostname;
    const socket = net.connect({ host, port: this.port });
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 1_000);
    const conn = new Connection(this, socket);
    this.open += 1;
    socket.setTimeout(this.connectTimeoutMs, () => socket.destroy(codedError(`connect ETIMEDOUT ${this.hostname}:${this.port}`, 'ETIMEDOUT')));
    socket.once('connect', () => socket.setTimeout(0));
    return conn;
  }

  /** Back to the pool after an exchange (or closed, when the pool is full or closing). */
  release(conn: Connection): void {
    conn.used = true;
    conn.resume();
    if (this.closed || conn.dead || conn.timeoutMs <= 0 || this.idle.length >= this.maxIdle) {
      conn.destroy();
      return;
    }
    conn.idleSince = Date.now();
    conn.socket.unref(); // an idle connection does not keep the process alive
    this.idle.push(conn);
  }

  /** A connection closed: off the idle list when it was there. */
  forget(conn: Connection): void {
    this.open -= 1;
    if (this.idle.length === 0) return;
    if (this.idle[this.idle.length - 1] === conn) this.idle.pop();
    else {
      const i = this.idle.indexOf(conn);
      if (i >= 0) this.idle.splice(i, 1);
    }
  }

  private sweep(now: number): void {
    let expired = 0;
    while (expired < this.idle.length && now - this.idle[expired].idleSince >= this.idle[expired].timeoutMs) expired++;
    if (expired === 0) return;
    for (const conn of this.idle.splice(0, expired)) conn.destroy();
  }
}
