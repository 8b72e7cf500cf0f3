import * as http from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { IDENTITY_HEADER, signIdentity, type IdentityResolver } from '@th/auth';
import { DomainError, HTTP_STATUS } from '@th/platform';

export interface Upstreams {
  ingest: string;
  query: string;
  /** Services that own later parts of the API; a route to an unconfigured one is answered 503 by the gateway. */
  exportWorker?: string;
  audit?: string;
  controlPlane?: string;
  agentServer?: string;
}

/** A route owned by a service this gateway has no URL for. */
export const UNCONFIGURED_UPSTREAM = '';

/**
 * Which service serves a (method, path) of the public API; null when the gateway serves it itself,
 * UNCONFIGURED_UPSTREAM when its service is not configured.
 */
export function routeFor(method: string, path: string, up: Upstreams): string | null {
  const p = path.replace(/^\/api(?:\/v1)?(?=\/)/, '');
  const optional = (url: string | undefined) => url ?? UNCONFIGURED_UPSTREAM;
  void optional; // used by the routes of the services that own later parts of the API
  if (p === '/runs/query' || p === '/runs/stats') return up.query;
  if (p === '/runs' || p.startsWith('/runs/')) return method === 'GET' ? up.query : up.ingest;
  if (p === '/sessions' || p.startsWith('/sessions/')) return up.query;
  if (p === '/datasets' || p.startsWith('/datasets/') || p === '/examples' || p.startsWith('/examples/')) return up.query;
  if (/^\/(?:v1\/)?platform\/datasets(?:\/|$)/.test(p)) return up.query;
  if (p === '/bulk-exports' || p.startsWith('/bulk-exports/')) return optional(up.exportWorker);
  // The deployment control plane (upload PUTs and push webhooks carry no API key: they go to CONTROL_PLANE_PUBLIC_URL directly).
  if (p === '/v2/deployments' || p.startsWith('/v2/deployments/') || p === '/v2/listeners' || p === '/v2/openapi.json') return optional(up.controlPlane);
  if (p === '/v1/integrations/git_host/install') return optional(up.controlPlane);
  if (/^\/deployments\/[^/]+\/upload-url$/.test(p)) return optional(up.controlPlane);
  if (p === '/feedback' || p.startsWith('/feedback/')) return method === 'GET' ? up.query : up.ingest;
  if (p === '/feedback-configs') return up.ingest; // stored and enforced where feedback is written
  if (p === '/otel/v1/traces' || p === '/model-price-map' || p.startsWith('/model-price-map/')) return up.ingest;
  if (p === '/audit-logs' || p.startsWith('/audit-logs/')) return optional(up.audit);
  return null;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', IDENTITY_HEADER]);

/**
 * The cluster gateway: authenticates, signs the caller's identity for the service, and streams the
 * request (still compressed, still chunked) to the service that owns the route.
 */
export function gatewayProxy(opts: { upstreams: Upstreams; resolver: IdentityResolver; signingKey: string; maxBodyBytes: number }) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const target = routeFor(req.method, req.path, opts.upstreams);
    if (target === null) return next();
    if (target === UNCONFIGURED_UPSTREAM) {
      res.status(503).json({ detail: `No service is configured for ${req.method} ${req.path}` });
      req.resume();
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > opts.maxBodyBytes) {
      res.status(413).json({ detail: `Request body exceeds the limit of ${opts.maxBodyBytes} bytes` });
      req.resume();
      return;
    }
    opts.resolver
      .resolve(req)
      .then((identity) => {
        if (!identity) {
          res.status(401).json({ detail: 'Missing or invalid API key' });
          req.resume();
          return;
        }
        const headers: http.OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(req.headers)) if (!HOP_HEADERS.has(k)) headers[k] = v;
        headers[IDENTITY_HEADER] = signIdentity(identity, opts.signingKey);
        if (req.headers['transfer-encoding']) headers['transfer-encoding'] = 'chunked';
        const url = new URL(req.originalUrl, target);
        const upstream = http.request(url, { method: req.method, headers, agent }, (up) => {
          const out: http.OutgoingHttpHeaders = {};
          for (const [k, v] of Object.entries(up.headers)) if (!HOP_HEADERS.has(k)) out[k] = v;
          res.writeHead(up.statusCode ?? 502, out);
          up.pipe(res);
        });
        upstream.on('error', (err) => {
          if (!res.headersSent) res.status(502).json({ detail: `Upstream unavailable: ${err.message}` });
          else res.destroy();
        });
        req.pipe(upstream);
      })
      .catch((err: unknown) => {
        if (err instanceof DomainError) res.status(HTTP_STATUS[err.code]).json({ detail: err.message });
        else res.status(500).json({ detail: 'Internal Server Error' });
        req.resume();
      });
  };
}
