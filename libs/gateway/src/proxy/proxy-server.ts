import type * as http from 'node:http';
import type { RateLimitDecision, RateLimiter } from '../rate-limit/rate-limiter';
import { httpMetricsMiddleware, METRICS, setRouteTemplate } from '@th/platform';
import { proxiedRoute, type ExtraHeaders, type Upstreams } from './gateway-proxy';

type Listener = (req: http.IncomingMessage, res: http.ServerResponse) => void;
type Proxy = (req: http.IncomingMessage, res: http.ServerResponse, next: (err?: unknown) => void, extra?: ExtraHeaders) => void;

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

/**
 * Serves the proxied routes straight from the HTTP server, ahead of Express and Nest: the rate limiter
 * (the same RateLimiter, answers and headers as its Express middleware), then the proxy. Every other
 * request (the gateway's own routes: /info, /ok, administration, health) goes to the listeners the
 * server had, i.e. the Express app, where the limiter middleware counts it as before.
 * Call after the app is created and before it listens.
 */
export function serveProxiedRoutesFirst(server: http.Server, opts: { upstreams: Upstreams; limiter: RateLimiter | null; proxy: Proxy }): void {
  const previous = server.listeners('request') as Listener[];
  if (previous.length === 0) throw new Error('serveProxiedRoutesFirst: the server has no request listener yet');
  server.removeAllListeners('request');
  const app = (req: http.IncomingMessage, res: http.ServerResponse) => {
    for (const l of previous) l.call(server, req, res);
  };
  const { limiter, proxy, upstreams } = opts;
  const failed = (req: http.IncomingMessage, res: http.ServerResponse) => (err?: unknown) => {
    // The proxy hands a request on only for routes it does not own, which never get here; keep a clear answer anyway.
    if (!res.headersSent) sendJson(res, err ? 500 : 404, { detail: err ? 'Internal Server Error' : 'Not Found' });
    req.resume();
  };
  /** What the limiter decided: the proxy (with the RateLimit-* headers), 429, or the store-down answer. */
  const answer = (req: http.IncomingMessage, res: http.ServerResponse, d: RateLimitDecision) => {
    METRICS.rateLimitDecisions.inc({ rule: d.rule.id, decision: d.kind });
    if (d.kind === 'store-down') {
      if (d.failMode === 'open') return proxy(req, res, failed(req, res));
      res.setHeader('Retry-After', '1');
      sendJson(res, 503, { detail: 'Rate limiting is unavailable; retry shortly' });
      req.resume();
      return;
    }
    // IETF draft-ietf-httpapi-ratelimit-headers (draft 06 form): one header per field.
    const rateLimit: ExtraHeaders = {
      'RateLimit-Limit': String(d.quota.limit),
      'RateLimit-Remaining': String(d.remaining),
      'RateLimit-Reset': String(d.resetSeconds),
      'RateLimit-Policy': `${d.quota.limit};w=${d.quota.windowSeconds}`,
    };
    // Handed to the proxy, which writes them with the answer's own headers in one writeHead.
    if (d.kind === 'allowed') return proxy(req, res, failed(req, res), rateLimit);
    for (const name in rateLimit) res.setHeader(name, rateLimit[name]);
    res.setHeader('Retry-After', String(d.resetSeconds));
    sendJson(res, 429, {
      detail: `Rate limit exceeded: ${d.quota.limit} requests per ${d.quota.windowSeconds} s for ${d.rule.match} (${d.rule.category}); retry after ${d.resetSeconds} s`,
    });
    req.resume();
  };
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const route = proxiedRoute(method, path, upstreams);
    if (route === null) return app(req, res);
    // Counted here: proxied requests never reach Express's middleware.
    setRouteTemplate(req, route.path);
    httpMetricsMiddleware(req, res, () => undefined);
    if (!limiter) return proxy(req, res, failed(req, res));
    let d: ReturnType<RateLimiter['decide']>;
    try {
      d = limiter.decide({ method, path, headers: req.headers, remoteAddress: req.socket.remoteAddress });
    } catch (err) {
      return failed(req, res)(err ?? new Error('rate limiter failed'));
    }
    // Answered at once while this replica holds a lease slot; otherwise after the store's answer.
    if (d instanceof Promise) d.then((decided) => answer(req, res, decided), (err: unknown) => failed(req, res)(err ?? new Error('rate limiter failed')));
    else answer(req, res, d);
  });
}
