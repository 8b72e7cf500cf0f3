// Every call to the service: same-origin, authenticated by the httpOnly session cookie (the app never
// sees a key or a token), with the header the service requires of cookie-authenticated writes.
export const CSRF_HEADER = 'x-requested-with';
export const CSRF_VALUE = 'tracehouse-web';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(describeDetail(status, detail));
  }
}

function describeDetail(status: number, detail: unknown): string {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).join('.')}: ${d.msg ?? ''}`).join('; ');
  }
  return `HTTP ${status}`;
}

export interface ApiOptions {
  method?: string;
  json?: unknown;
  tenant?: string;
  signal?: AbortSignal;
}

export async function api<T>(path: string, opts: ApiOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', [CSRF_HEADER]: CSRF_VALUE };
  if (opts.tenant) headers['x-tenant-id'] = opts.tenant;
  if (opts.json !== undefined) headers['content-type'] = 'application/json';
  // Paths of the API's other versions (/api/v2/...) are given whole.
  const res = await fetch(path.startsWith('/api/') ? path : `/api/v1${path}`, {
    method: opts.method ?? (opts.json !== undefined ? 'POST' : 'GET'),
    headers,
    body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
    credentials: 'same-origin',
    signal: opts.signal,
  });
  const text = await res.text();
  const body: unknown = text ? JSON.parse(text) : null;
  if (!res.ok) throw new ApiError(res.status, (body as { detail?: unknown } | null)?.detail ?? null);
  return body as T;
}

export type { SessionInfo } from '@th/contracts';
