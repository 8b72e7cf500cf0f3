import { Logger } from '@nestjs/common';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream';
import type { CallerVerdict } from './deployment-callers';

/** Limits of a front proxy's client side (the deployment's address, open to the deployment's callers). */
export interface FrontProxyLimits {
  /** Time a client has to send a request's headers (slow-header clients are cut off). */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included (not its response: streams last as long as they run). */
  requestTimeoutMs: number;
  /** How long an idle kept-alive client connection is kept between two requests. */
  keepAliveTimeoutMs: number;
  /** Client connections served at once; more are refused at accept, so one caller cannot use up the control plane's descriptors. */
  maxConnections: number;
  /** How often the two timeouts above are checked (node:http's default, 30 s, would let them run 30 s over). */
  checkIntervalMs: number;
}

export const FRONT_PROXY_LIMITS: FrontProxyLimits = { headersTimeoutMs: 20_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 5_000, maxConnections: 2_000, checkIntervalMs: 2_000 };

/** Hop-by-hop headers (RFC 9110 7.6.1): about one connection, never forwarded; Transfer-Encoding is set again where needed. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .toLowerCase()
      .split(',')
      .map((h) => h.trim()),
  );
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name) && !named.has(name)) out[name] = value;
  return out;
}

/** Where a revision's server listens: a unix socket (sandboxed) or a loopback TCP port (AGENT_SANDBOX=unsafe-none). */
export type ServerAddress = { socketPath: string } | { port: number };

/** Decides whether a request's credential may reach the deployment (GET /ok is always let through, for health checks). */
export type Authorize = (headers: http.IncomingHttpHeaders) => Promise<CallerVerdict>;

const isHealthCheck = (req: http.IncomingMessage) => (req.method === 'GET' || req.method === 'HEAD') && (req.url ?? '').split('?')[0] === '/ok';

/**
 * A stable address per deployment that forwards each HTTP request to whichever revision's server is active.
 * Per request (not per connection), so a client's kept-alive connection survives the switch to a new revision.
 * Disconnects pass both ways: a client that leaves has its upstream request destroyed (the agent server sees it
 * leave: `on_disconnect: "cancel"` cancels the run, a thread stream ends), and an upstream that breaks off has
 * the client's response destroyed (the client sees a cut, not a short answer). Every request but GET /ok needs a
 * credential of the deployment's workspace, checked before anything is forwarded.
 */
export class FrontProxy {
  private readonly logger = new Logger('front-proxy');
  private target: ServerAddress | null = null;
  private readonly server: http.Server;
  /**
   * Upstream connections: kept alive for reuse, with no cap on those in use (a cap let 64 held streams queue every
   * other request, `/ok` included). Each in use belongs to one client request, so the client side's maxConnections
   * bounds them. Pools are per server: a request sent after a switch never takes a connection to the old revision.
   */
  private readonly agent = new http.Agent({ keepAlive: true, maxFreeSockets: 16, scheduling: 'lifo' });

  constructor(
    private readonly authorize: Authorize,
    limits: FrontProxyLimits = FRONT_PROXY_LIMITS,
  ) {
    this.server = http.createServer(
      {
        headersTimeout: limits.headersTimeoutMs,
        requestTimeout: limits.requestTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
        connectionsCheckingInterval: limits.checkIntervalMs,
        // TCP keep-alive probes find clients that vanished without a FIN (their streams are then closed upstream too).
        keepAlive: true,
        keepAliveInitialDelay: 30_000,
      },
      (req, res) => this.admit(req, res),
    );
    this.server.maxConnections = limits.maxConnections;
  }

  private admit(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (isHealthCheck(req)) return this.forward(req, res, false);
    req.pause(); // the body waits for the verdict
    this.authorize(req.headers).then(
      (v) => {
        if (res.destroyed) return; // the client left while its key was checked
        if (v.ok) return this.forward(req, res, true);
        const body = JSON.stringify({ detail: v.detail });
        // The body is not read: the connection closes after the answer.
        res.writeHead(v.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
      },
      () => res.writeHead(503, { connection: 'close' }).end(),
    );
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, authorized: boolean): void {
    const target = this.target;
    if (target === null) {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"No revision is deployed yet"}');
      return;
    }
    const headers = endToEnd(req.headers);
    if (req.headers['transfer-encoding'] !== undefined) headers['transfer-encoding'] = 'chunked'; // the body as it came, framed again
    // The service's credential is not the deployment's code's to see (an Authorization that did not carry it is).
    if (authorized) {
      if (headers['x-api-key'] === undefined) delete headers.authorization;
      delete headers['x-api-key'];
    }
    const where = 'socketPath' in target ? { socketPath: target.socketPath } : { host: '127.0.0.1', port: target.port };
    const up = http.request({ ...where, method: req.method, path: req.url, headers, agent: this.agent });
    // The client left (before or during the answer): the upstream request goes too.
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.on('error', () => up.destroy());
    up.once('response', (r) => {
      res.writeHead(r.statusCode ?? 502, endToEnd(r.headers));
      res.flushHeaders(); // an event stream's headers go out at once, as its server sent them (not with the first event)
      // An upstream answer cut short (its server died) destroys the client's response; a client gone destroys r.
      pipeline(r, res, (err) => {
        if (err) {
          up.destroy();
          res.destroy();
        }
      });
    });
    up.on('error', (err) => {
      if (res.headersSent || res.destroyed) {
        res.destroy();
        return;
      }
      const body = JSON.stringify({ detail: `agent server unavailable: ${err.message}` });
      // The request body may be unread: close the connection after answering rather than read the rest.
      res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
    });
    req.pipe(up);
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((res, rej) => {
      this.server.once('error', rej);
      this.server.listen(port, host, () => {
        const bound = (this.server.address() as AddressInfo).port;
        this.server.off('error', rej);
        // Later errors (accept failing for lack of descriptors, say) are the address's, not the control plane's to die of.
        this.server.on('error', (err) => this.logger.error({ msg: 'deployment address error', port: bound, error: err.message }));
        res(bound);
      });
    });
  }

  /** Sends every request from now on to this server (null: answer 503). Requests under way finish where they are. */
  point(target: ServerAddress | null): void {
    this.target = target;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    this.agent.destroy();
    return new Promise((r) => this.server.close(() => r()));
  }
}
