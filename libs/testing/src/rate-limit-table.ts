/**
 * The spec's "Request rate limits (tracing API, US and EU production)" table written out for tests,
 * with one request per row that the row (and no other) should count, and a walk of a row through a
 * running gateway. Kept apart from the limiter's own table so a test compares the two.
 */

export type RateLimitKeyKind = 'ip' | 'api-key' | 'user-ip';

export interface SpecRateLimitRow {
  /** The limiter's rule id the row should select. */
  ruleId: string;
  /** The table's "Match (method)" cell. */
  match: string;
  key: RateLimitKeyKind;
  /** [count, interval seconds] */
  us: [number, number];
  eu: [number, number];
  /** A request only this row should count (the identity headers are added per walk). */
  sample: { method: string; path: string };
}

const UUID = '0190a3c2-7b1e-7c3d-9e4f-123456789abc';

export const SPEC_RATE_LIMIT_ROWS: readonly SpecRateLimitRow[] = [
  { ruleId: 'high-throughput-ip', match: 'OPTIONS, /info, */v1/metadata/submit', key: 'ip', us: [2000, 10], eu: [2000, 10], sample: { method: 'GET', path: '/api/v1/info' } },
  { ruleId: 'auth-api-key', match: '/auth', key: 'api-key', us: [2000, 10], eu: [2000, 10], sample: { method: 'POST', path: '/api/v1/auth' } },
  { ruleId: 'auth-user', match: '/auth', key: 'user-ip', us: [2000, 10], eu: [2000, 10], sample: { method: 'GET', path: '/auth' } },
  { ruleId: 'beacon-ip', match: '/v1/beacon', key: 'ip', us: [2000, 10], eu: [2000, 10], sample: { method: 'POST', path: '/v1/beacon' } },
  { ruleId: 'repos-api-key', match: '/repos', key: 'api-key', us: [100, 60], eu: [100, 60], sample: { method: 'GET', path: '/api/v1/repos/acme/prompt' } },
  { ruleId: 'repos-user', match: '/repos', key: 'user-ip', us: [100, 60], eu: [100, 60], sample: { method: 'GET', path: '/api/v1/repos' } },
  { ruleId: 'runs-batch-api-key', match: 'POST /runs/batch', key: 'api-key', us: [2000, 10], eu: [2000, 10], sample: { method: 'POST', path: '/runs/batch' } },
  { ruleId: 'otel-traces-api-key', match: 'POST /otel/v1/traces', key: 'api-key', us: [2000, 10], eu: [2000, 10], sample: { method: 'POST', path: '/otel/v1/traces' } },
  { ruleId: 'charts-api-key', match: 'POST containing /charts', key: 'api-key', us: [750, 600], eu: [750, 600], sample: { method: 'POST', path: '/api/v1/charts/section' } },
  { ruleId: 'charts-user', match: 'POST containing /charts', key: 'user-ip', us: [750, 600], eu: [750, 600], sample: { method: 'POST', path: '/api/v1/charts' } },
  { ruleId: 'runs-multipart-api-key', match: 'POST /runs/multipart', key: 'api-key', us: [6000, 10], eu: [6000, 10], sample: { method: 'POST', path: '/api/v1/runs/multipart' } },
  { ruleId: 'runs-query-api-key', match: 'POST /runs/query', key: 'api-key', us: [15, 10], eu: [15, 10], sample: { method: 'POST', path: '/api/v1/runs/query' } },
  { ruleId: 'runs-query-user', match: 'POST /runs/query', key: 'user-ip', us: [300, 10], eu: [300, 10], sample: { method: 'POST', path: '/runs/query' } },
  { ruleId: 'generate-api-key', match: '/generate', key: 'api-key', us: [30, 3600], eu: [30, 3600], sample: { method: 'POST', path: '/api/v1/generate' } },
  { ruleId: 'generate-user', match: '/generate', key: 'user-ip', us: [30, 3600], eu: [30, 3600], sample: { method: 'POST', path: '/api/v1/prompts/generate' } },
  { ruleId: 'commits-api-key', match: '/commits', key: 'api-key', us: [10000, 60], eu: [2000, 60], sample: { method: 'GET', path: '/api/v1/commits/acme/prompt' } },
  { ruleId: 'commits-user', match: '/commits', key: 'user-ip', us: [10000, 60], eu: [2000, 60], sample: { method: 'POST', path: '/commits/acme/prompt' } },
  { ruleId: 'deletion-api-key', match: 'DELETE /sessions or */trigger', key: 'api-key', us: [10, 60], eu: [10, 60], sample: { method: 'DELETE', path: `/api/v1/sessions/${UUID}` } },
  { ruleId: 'deletion-user', match: 'DELETE /sessions or */trigger', key: 'user-ip', us: [30, 60], eu: [30, 60], sample: { method: 'POST', path: '/api/v1/rules/abc/trigger' } },
  { ruleId: 'runs-create-api-key', match: 'POST /runs (single run)', key: 'api-key', us: [2000, 10], eu: [2000, 10], sample: { method: 'POST', path: '/api/v1/runs' } },
  { ruleId: 'runs-patch-api-key', match: 'PATCH containing /runs', key: 'api-key', us: [2000, 10], eu: [2000, 10], sample: { method: 'PATCH', path: `/runs/${UUID}` } },
  { ruleId: 'feedback-api-key', match: 'POST /feedback', key: 'api-key', us: [2000, 10], eu: [2000, 10], sample: { method: 'POST', path: '/api/v1/feedback' } },
  { ruleId: 'run-lookup-api-key', match: 'GET /runs/{uuid} or /api/v1/runs/{uuid}', key: 'api-key', us: [30, 60], eu: [30, 60], sample: { method: 'GET', path: `/api/v1/runs/${UUID}` } },
  { ruleId: 'examples-api-key', match: 'GET containing /examples', key: 'api-key', us: [5000, 60], eu: [5000, 60], sample: { method: 'GET', path: '/api/v1/examples' } },
  { ruleId: 'default-api-key', match: 'Any request with x-api-key', key: 'api-key', us: [1000, 10], eu: [1000, 10], sample: { method: 'GET', path: '/api/v1/sessions' } },
  { ruleId: 'default-user', match: 'Any request with x-user-id', key: 'user-ip', us: [1000, 10], eu: [1000, 10], sample: { method: 'POST', path: '/runs/batch' } },
  { ruleId: 'public-download-ip', match: '/public/download', key: 'ip', us: [5000, 60], eu: [5000, 60], sample: { method: 'GET', path: '/api/v1/public/download' } },
  { ruleId: 'stats-api-key', match: '/runs/stats', key: 'api-key', us: [1, 10], eu: [20, 10], sample: { method: 'POST', path: '/api/v1/runs/stats' } },
  { ruleId: 'catch-all-ip', match: 'All other IPs (catch-all)', key: 'ip', us: [100, 60], eu: [100, 60], sample: { method: 'GET', path: '/ok' } },
];

export interface RateLimitProbe {
  method: string;
  path: string;
  headers: Record<string, string>;
}

/** What the walk needs from the gateway under test. */
export interface RateLimitTarget {
  send(req: RateLimitProbe): Promise<Response>;
  /** Sets the counter of `ruleId` for this request's identity to `count` (window opened now). */
  preload(ruleId: string, req: RateLimitProbe, count: number, windowSeconds: number): Promise<void>;
}

export interface ObservedResponse {
  status: number;
  limit: string | null;
  remaining: string | null;
  reset: string | null;
  policy: string | null;
  retryAfter: string | null;
  body: string;
}

export interface RowWalk {
  row: SpecRateLimitRow;
  limit: number;
  windowSeconds: number;
  /** true when the counter was preloaded to `limit - allowed.length` before the walk. */
  preloaded: boolean;
  /** The requests up to and including the limit-th one. */
  allowed: ObservedResponse[];
  /** The request after the limit. */
  over: ObservedResponse;
}

/** Rows up to this limit are walked request by request; larger ones start near the limit. */
export const FULL_WALK_MAX = 30;
const NEAR_LIMIT_STEPS = 3;

/** The valid credentials a probe carries: the limiter counts only verified ones as a key or a user. */
export interface ProbeCredentials {
  /** An API key (or PAT, service key) the service knows. */
  apiKey: string;
  /** A session bearer token signed with the service's session secret. */
  sessionToken: string;
}

/**
 * The identity of a row's probe: the caller's own credentials (a fresh key and session per row and run)
 * and client IP (sent as X-Forwarded-For, the gateway trusting one proxy), so no two rows or runs share
 * a counter. A user row's probe also sends x-user-id, which the limiter ignores without the session.
 */
export function rowProbe(row: SpecRateLimitRow, index: number, runTag: string, credentials: ProbeCredentials): RateLimitProbe {
  const headers: Record<string, string> = { 'x-forwarded-for': `10.77.${index}.${(parseInt(runTag.slice(0, 2), 16) || 0) % 250}` };
  if (row.key === 'api-key') headers['x-api-key'] = credentials.apiKey;
  if (row.key === 'user-ip') {
    headers.authorization = `Bearer ${credentials.sessionToken}`;
    headers['x-user-id'] = `user-${runTag}-${index}`;
  }
  if (row.sample.method === 'POST' || row.sample.method === 'PATCH') headers['content-type'] = 'application/json';
  return { method: row.sample.method, path: row.sample.path, headers };
}

async function observe(res: Response): Promise<ObservedResponse> {
  return {
    status: res.status,
    limit: res.headers.get('ratelimit-limit'),
    remaining: res.headers.get('ratelimit-remaining'),
    reset: res.headers.get('ratelimit-reset'),
    policy: res.headers.get('ratelimit-policy'),
    retryAfter: res.headers.get('retry-after'),
    body: await res.text(),
  };
}

/** Drives one row to its limit and one request past it through the target. */
export async function walkRateLimitRow(target: RateLimitTarget, row: SpecRateLimitRow, region: 'us' | 'eu', probe: RateLimitProbe): Promise<RowWalk> {
  const [limit, windowSeconds] = row[region];
  const preloaded = limit > FULL_WALK_MAX;
  const steps = preloaded ? NEAR_LIMIT_STEPS : limit;
  if (preloaded) await target.preload(row.ruleId, probe, limit - steps, windowSeconds);
  const allowed: ObservedResponse[] = [];
  for (let i = 0; i < steps; i++) allowed.push(await observe(await target.send(probe)));
  const over = await observe(await target.send(probe));
  return { row, limit, windowSeconds, preloaded, allowed, over };
}
