import { ROUTE_TABLE, type HttpMethod, type RouteSpec } from '@th/contracts';
import type { z } from 'zod';
import { ApiError, UsageError } from './errors';
import type { Connection } from './settings';

/**
 * The route table's entry for a route the CLI calls. The table is the one place a path is declared: a route the
 * CLI names that the table lost fails here at load (and in cli-routes.spec.ts), not as a 404 in a pipeline.
 */
export function route(method: HttpMethod, path: string): RouteSpec {
  const r = ROUTE_TABLE.find((x) => x.method === method && x.path === path);
  if (!r) throw new Error(`${method.toUpperCase()} ${path} is not in the route table (libs/contracts/src/routes)`);
  return r;
}

export interface CallOptions {
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
}

/** How long one request may take before the CLI gives up on it (waiting loops poll with many short requests). */
const REQUEST_TIMEOUT_MS = 120_000;

export class ApiClient {
  constructor(
    private readonly conn: Connection,
    private readonly userAgent: string,
  ) {}

  /** The absolute URL of a route with its path parameters filled in. */
  url(r: RouteSpec, params: Record<string, string> = {}, query: CallOptions['query'] = {}): string {
    const path = r.path.replace(/\{(\w+)(\*?)\}/g, (_, name: string, wild: string) => {
      const v = params[name];
      if (v === undefined) throw new Error(`missing path parameter ${name} for ${r.path}`);
      return wild ? v.split('/').map(encodeURIComponent).join('/') : encodeURIComponent(v);
    });
    const base = r.service === 'control-plane' ? this.conn.controlPlaneUrl : this.conn.endpoint;
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const q = qs.toString();
    return `${base}${path}${q ? `?${q}` : ''}`;
  }

  /**
   * Calls a route; the body is checked against the route's own request schema first, so a value the service would
   * refuse is a usage error that names the field, before anything is written.
   */
  async call<T>(r: RouteSpec, opts: CallOptions = {}): Promise<T> {
    if (r.body && opts.body !== undefined) checkBody(r.body, opts.body);
    const headers: Record<string, string> = { 'x-api-key': this.conn.apiKey, 'user-agent': this.userAgent, accept: 'application/json' };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const url = this.url(r, opts.params, opts.query);
    return this.send<T>(`${r.method.toUpperCase()} ${r.path}`, url, {
      method: r.method.toUpperCase(),
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
  }

  /** PUT of a file to an issued upload URL (it carries its own authorization). */
  async upload(url: string, data: Buffer): Promise<void> {
    await this.send('PUT upload', url, { method: 'PUT', headers: { 'content-type': 'application/gzip', 'user-agent': this.userAgent }, body: data });
  }

  private async send<T>(what: string, url: string, init: RequestInit): Promise<T> {
    let res: Response;
    try {
      res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiError(0, `could not reach ${new URL(url).origin} (${cause?.code ?? cause?.message ?? (err as Error).message})`, null);
    }
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: kept as text for the message
    }
    if (!res.ok) throw new ApiError(res.status, `${what}: ${res.status} ${describeError(body)}`, body);
    return body as T;
  }
}

function checkBody(schema: z.ZodTypeAny, body: unknown): void {
  const parsed = schema.safeParse(body);
  if (parsed.success) return;
  const lines = parsed.error.issues.map((i) => `  ${['body', ...i.path.map(String)].join('.')}: ${i.message}`);
  throw new UsageError(`invalid request:\n${lines.join('\n')}`);
}

/** The service's error body as one readable string: `{detail}` or the validation list `{detail: [{loc, msg}]}`. */
export function describeError(body: unknown): string {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail
      .map((d: { loc?: unknown[]; msg?: string }) => `${Array.isArray(d.loc) ? d.loc.join('.') : '?'}: ${d.msg ?? JSON.stringify(d)}`)
      .join('; ');
  }
  if (typeof body === 'string') return body.slice(0, 500);
  return JSON.stringify(body)?.slice(0, 500) ?? '';
}
