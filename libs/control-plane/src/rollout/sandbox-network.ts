import { chmodSync, linkSync, mkdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { OutboundPolicy } from '@th/platform';

/** Bounds of one deployment's relays (its builds and servers together). */
export interface RelayLimits {
  /** Connections open at once through every relay of a deployment; more are closed at accept. */
  maxConnections: number;
  /** A relayed connection with no traffic either way for this long is closed. */
  idleTimeoutMs: number;
  /** Time a database client has to send its startup message. */
  startupTimeoutMs: number;
}
export const RELAY_LIMITS: RelayLimits = { maxConnections: 128, idleTimeoutMs: 15 * 60_000, startupTimeoutMs: 10_000 };

/** Loopback ports the relays listen on inside a sandbox's network namespace (nothing else listens there). */
export const INSIDE_PORTS = { postgres: 5432, trace: 1984, proxy: 3128 } as const;
type RelayName = keyof typeof INSIDE_PORTS;

/** Where the sandbox sees the folder of relay sockets. */
export const INSIDE_SOCKETS = '/run/th/net';

/** Where the sandbox sees the preload that points Node's fetch at its proxy (scripts/sandbox-proxy-preload.js). */
export const PROXY_PRELOAD_INSIDE = '/run/th/proxy-preload.js';

export interface NetworkSpec {
  /** The deployment's database: only this role on this database passes; the relay connects only to host:port. */
  postgres?: { host: string; port: number; user: string; database: string };
  /** The service's ingest address: every connection goes there and nowhere else. */
  trace?: URL;
  /** Outbound HTTP(S) through a CONNECT proxy whose every destination passes this policy. */
  proxy?: OutboundPolicy;
}

/** Connections a deployment has open through its relays, shared by its builds and revisions. */
export class ConnectionBudget {
  private open = 0;
  constructor(private readonly max: number) {}
  /** Counts the socket while it is open; false (socket destroyed) when the deployment is at its bound. */
  take(socket: Duplex): boolean {
    if (this.open >= this.max) {
      socket.destroy();
      return false;
    }
    this.open++;
    socket.once('close', () => this.open--);
    return true;
  }
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
const MAX_STARTUP_BYTES = 10_000;

/** A PostgreSQL ErrorResponse (FATAL, invalid_authorization_specification). */
function pgError(message: string): Buffer {
  const fields = Buffer.concat([Buffer.from('SFATAL\0VFATAL\0C28000\0M'), Buffer.from(message), Buffer.from('\0\0')]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

/** The key/value pairs of a protocol-3 startup message's body (after length and version). */
function startupParams(body: Buffer): Map<string, string> | null {
  const parts = body.toString('utf8').split('\0');
  // key\0value\0 ... \0: an even count of strings, then the empty terminator (and the split's trailing empty string).
  if (parts.length < 2 || parts.at(-1) !== '' || parts.at(-2) !== '') return null;
  const pairs = parts.slice(0, -2);
  if (pairs.length % 2 !== 0) return null;
  const params = new Map<string, string>();
  for (let i = 0; i < pairs.length; i += 2) params.set(pairs[i], pairs[i + 1]);
  return params;
}

/**
 * A sandbox's network, served outside it: one unix socket per relay in `dir` (bound into the sandbox read-only at
 * INSIDE_SOCKETS, where the in-sandbox relay forwards loopback ports to them). The rules are enforced here, on the
 * host side, since anything inside the sandbox is the tenant's to replace.
 */
export class SandboxNetwork {
  private readonly servers: net.Server[] = [];
  private readonly sockets = new Set<Duplex>();
  private readonly names: RelayName[] = [];

  private constructor(
    private readonly dir: string,
    private readonly spec: NetworkSpec,
    private readonly budget: ConnectionBudget,
    private readonly limits: RelayLimits,
  ) {}

  static async open(dir: string, spec: NetworkSpec, budget: ConnectionBudget, limits: RelayLimits = RELAY_LIMITS): Promise<SandboxNetwork> {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chmodSync(dir, 0o755); // the sandbox's user reaches the sockets; it cannot add or replace any
    const n = new SandboxNetwork(dir, spec, budget, limits);
    try {
      if (spec.postgres) await n.serve('postgres', net.createServer((s) => n.accept(s) && n.postgres(s)));
      if (spec.trace) await n.serve('trace', net.createServer((s) => n.accept(s) && n.trace(s)));
      if (spec.proxy) await n.serve('proxy', n.proxyServer(spec.proxy));
    } catch (err) {
      await n.close();
      throw err;
    }
    return n;
  }

  /** `port=socket` pairs for the in-sandbox relay (scripts/sandbox-relay.js). */
  relayArgs(): string[] {
    return this.names.map((name) => `${INSIDE_PORTS[name]}=${INSIDE_SOCKETS}/${name}.sock`);
  }

  /**
   * The proxy variables (both cases: curl reads only the lower-case http_proxy) and what bypasses the proxy;
   * NODE_OPTIONS loads the preload that makes Node's fetch use them (sandbox.ts binds it in), and OUTBOUND_PROXY
   * is the agent server's setting for its run webhooks.
   */
  proxyEnv(): Record<string, string> {
    if (!this.names.includes('proxy')) return {};
    const proxy = `http://127.0.0.1:${INSIDE_PORTS.proxy}`;
    const noProxy = '127.0.0.1,localhost,::1';
    return {
      HTTP_PROXY: proxy, HTTPS_PROXY: proxy, http_proxy: proxy, https_proxy: proxy, NO_PROXY: noProxy, no_proxy: noProxy,
      NODE_OPTIONS: `--require ${PROXY_PRELOAD_INSIDE}`,
      OUTBOUND_PROXY: proxy,
    };
  }

  get hostDir(): string {
    return this.dir;
  }

  private async serve(name: RelayName, server: net.Server): Promise<void> {
    const path = join(this.dir, `${name}.sock`);
    if (Buffer.byteLength(path) > 107) throw new Error(`socket path too long for a unix socket: ${path}`);
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(path, () => {
        server.off('error', rej);
        res();
      });
    });
    chmodSync(path, 0o666); // connecting needs write permission on the socket; the folder stays the control plane's
    server.on('error', () => undefined); // accept errors (out of descriptors) are not the control plane's to die of
    this.servers.push(server);
    this.names.push(name);
  }

  /** Every accepted socket: within the deployment's budget, tracked for close, cut when idle. */
  private accept(s: Duplex & { setTimeout?: (ms: number, cb?: () => void) => unknown }): boolean {
    if (!this.budget.take(s)) return false;
    this.track(s);
    return true;
  }

  private track(s: Duplex & { setTimeout?: (ms: number, cb?: () => void) => unknown }): void {
    this.sockets.add(s);
    s.once('close', () => this.sockets.delete(s));
    s.on('error', () => s.destroy());
    s.setTimeout?.(this.limits.idleTimeoutMs, () => s.destroy());
  }

  private pipe(a: Duplex, b: Duplex): void {
    this.track(b as net.Socket);
    a.pipe(b).pipe(a);
    const end = () => {
      a.destroy();
      b.destroy();
    };
    a.once('close', end);
    b.once('close', end);
  }

  /**
   * Reads the startup message and lets only the deployment's own role and database through (with trust
   * authentication PostgreSQL itself would let any role in). SSL and GSS encryption are declined: the hop to
   * the server is the control plane's, and inside the sandbox it is loopback.
   */
  private postgres(client: net.Socket): void {
    const pg = this.spec.postgres as NonNullable<NetworkSpec['postgres']>;
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => client.destroy(), this.limits.startupTimeoutMs);
    const refuse = (msg: string) => {
      clearTimeout(timer);
      client.removeListener('data', onData);
      client.end(pgError(msg));
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 8) {
        const len = buf.readInt32BE(0);
        if (len < 8 || len > MAX_STARTUP_BYTES) return refuse('invalid startup packet');
        if (buf.length < len) return;
        const code = buf.readInt32BE(4);
        if (len === 8 && (code === SSL_REQUEST || code === GSSENC_REQUEST)) {
          client.write('N');
          buf = buf.subarray(8);
          continue;
        }
        if (len === 16 && code === CANCEL_REQUEST) return connect(); // carries a backend's secret key, no role
        if (code >> 16 !== 3) return refuse('unsupported frontend protocol');
        const params = startupParams(buf.subarray(8, len));
        const user = params?.get('user');
        const database = params?.get('database') ?? user;
        if (!params || params.has('replication') || user !== pg.user || database !== pg.database) {
          return refuse(`only role "${pg.user}" on database "${pg.database}" can be reached from this deployment`);
        }
        return connect();
      }
    };
    const connect = () => {
      clearTimeout(timer);
      client.removeListener('data', onData);
      client.pause();
      const server = pg.host.startsWith('/') ? net.connect(join(pg.host, `.s.PGSQL.${pg.port}`)) : net.connect(pg.port, pg.host);
      server.write(buf);
      this.pipe(client, server);
      client.resume();
    };
    client.on('data', onData);
  }

  private trace(client: net.Socket): void {
    const url = this.spec.trace as URL;
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const server = url.protocol === 'https:' ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect(port, host);
    this.pipe(client, server);
  }

  /** An HTTP proxy: CONNECT for HTTPS, absolute-form requests for plain HTTP; every destination through the policy. */
  private proxyServer(policy: OutboundPolicy): http.Server {
    const agent = policy.agents({ keepAlive: false }).http;
    const server = http.createServer((req, res) => {
      let url: URL;
      try {
        url = new URL(req.url ?? '');
      } catch {
        res.writeHead(400, { connection: 'close' }).end('absolute-form request URL expected\n');
        return;
      }
      if (url.protocol !== 'http:') {
        res.writeHead(400, { connection: 'close' }).end('only http: URLs (use CONNECT for https)\n');
        return;
      }
      const headers = { ...req.headers };
      for (const h of ['proxy-connection', 'proxy-authorization', 'connection', 'keep-alive']) delete headers[h];
      const up = http.request(url, { method: req.method, headers, agent });
      up.on('response', (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', (err) => {
        if (res.headersSent) return void res.destroy();
        const refused = (err as { code?: string }).code === 'EOUTBOUNDPOLICY';
        res.writeHead(refused ? 403 : 502, { 'content-type': 'text/plain', connection: 'close' }).end(`${refused ? err.message : 'upstream unreachable'}\n`);
      });
      res.on('close', () => up.destroy());
      req.pipe(up);
    });
    server.on('connection', (s: net.Socket) => this.accept(s));
    server.on('connect', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(req.url ?? '');
      const port = m ? Number(m[2]) : 0;
      if (!m || port < 1 || port > 65535) return void client.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      const host = m[1].replace(/^\[|\]$/g, '');
      const answer = (status: string, text: string) => client.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${text}\n`);
      if (net.isIP(host) && !policy.allows(host, port, host)) return void answer('403 Forbidden', 'destination refused by the outbound policy');
      const up = net.connect({ host, port, lookup: policy.lookupFor(port) });
      up.once('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) up.write(head);
        this.pipe(client, up);
      });
      up.once('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EOUTBOUNDPOLICY') answer('403 Forbidden', 'destination refused by the outbound policy');
        else answer('502 Bad Gateway', 'destination unreachable');
      });
    });
    server.headersTimeout = this.limits.startupTimeoutMs;
    server.requestTimeout = 0; // downloads last as long as they last; idle connections are cut by the socket timeout
    return server;
  }

  /** Stops every relay and closes what passes through them; the sockets and their folder are removed. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A listening unix socket at `path` for a sandboxed server, made here and handed over as a descriptor (the server
 * listens on it, LISTEN_SOCKET=fd:N): the sandbox never names a host path, so it cannot point the front proxy at
 * another socket of the host with a link. Returns the descriptor and a release to call once the child holds it.
 */
export async function listeningSocketFor(path: string): Promise<{ fd: number; release(): Promise<void> }> {
  rmSync(path, { force: true });
  const tmp = `${path}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  const server = net.createServer(() => undefined);
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(tmp, () => res());
  });
  // Closing the server here unlinks the name it was bound to: the socket keeps a second name that outlives it.
  linkSync(tmp, path);
  const fd = (server as unknown as { _handle: { fd: number } })._handle.fd;
  return { fd, release: () => new Promise<void>((r) => server.close(() => r())) };
}
