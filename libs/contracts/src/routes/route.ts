import type { z } from 'zod';
import type { AuditOperation } from '../audit.schema';

/** The processes that serve HTTP routes; the gateway forwards each route to the one that owns it. */
export const SERVICES = ['gateway', 'ingest', 'query', 'export-worker', 'audit', 'control-plane', 'agent-server'] as const;
export type ServiceName = (typeof SERVICES)[number];

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface TrackedOperationSpec {
  operation: AuditOperation;
  /** Type of the resource named by `resourceParam` (e.g. `tracer_session`), named in a Failure event. */
  resourceType?: string;
  /** Path parameter holding the affected resource's id (e.g. `session_id`). */
  resourceParam?: string;
}

/**
 * One HTTP route, described once: the gateway's routing, the OpenAPI documents and the route walker test
 * (libs/gateway/src/routes/route-table.spec.ts) all read it from here.
 */
export interface RouteSpec {
  method: HttpMethod;
  /** The public path, OpenAPI style (`/api/v1/runs/{run_id}`); a last parameter ending in `*` takes the rest of the path. */
  path: string;
  /** The service whose controller serves the route (in the cluster form; standalone serves every route). */
  service: ServiceName;
  summary: string;
  tag?: string;
  body?: z.ZodTypeAny;
  bodyType?: 'json' | 'multipart';
  /** The parts of a multipart body (default: the summary). */
  parts?: string;
  query?: z.ZodObject<z.ZodRawShape>;
  responses: Record<number, z.ZodTypeAny | null>;
  /** Media type of the success answers when it is not JSON (errors are JSON). */
  responseType?: string;
  /** Served without an API key: the service authenticates the request itself (a share token, a signature, an issued path). */
  public?: boolean;
  /** The spec's tracked operation the route performs: every attempt is recorded in the audit log (libs/audit-client). */
  audit?: TrackedOperationSpec;
  /** Called by other services directly (signed identity), never forwarded by the gateway. */
  internal?: boolean;
}

/** A path as the OpenAPI documents write it (a wildcard parameter is a plain one there). */
export const openApiPath = (path: string) => path.replace(/\{(\w+)\*\}/g, '{$1}');

/** A route's summary as the OpenAPI documents give it: with its tracked operation. */
export const documentedSummary = (r: RouteSpec) => (r.audit ? `${r.summary} (audit: ${r.audit.operation})` : r.summary);

/** The same routes, owned by one service. */
export const ownedBy = (service: ServiceName, routes: Omit<RouteSpec, 'service'>[]): RouteSpec[] => routes.map((r) => ({ ...r, service }));

/**
 * The path a service's router sees for a public path: the SDKs append paths to whatever base the user set, so
 * `/`, `/api` and `/api/v1` are served alike (except `/api/v1/platform/...`, served as `/v1/platform/...`, and
 * `/api/v2/...`, kept). Trailing slashes are dropped (Express routes ignore them).
 */
export function servicePath(path: string): string {
  let p = path;
  if (p.startsWith('/api/v1/platform')) p = p.slice('/api'.length);
  else if (!p.startsWith('/api/v2')) {
    const m = /^\/api(?:\/v1)?(?=\/|$)/.exec(p);
    if (m) p = p.slice(m[0].length) || '/';
  }
  return p.length > 1 && p.endsWith('/') ? p.replace(/\/+$/, '') || '/' : p;
}
