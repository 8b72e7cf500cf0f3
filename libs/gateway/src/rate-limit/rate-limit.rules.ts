/**
 * The spec's "Request rate limits (tracing API, US and EU production)" table as data, one entry per row
 * in the table's order, and the choice of the one rule that counts a request.
 *
 * Path matching (the spec's wording): exact paths are compared after the optional `/api` or `/api/v1`
 * prefix is removed; "containing" matches whole path segments anywhere in the path; "ending" (the rows
 * written `*\/...` and the paths the spec lists as "paths ending") matches the end of the raw path.
 */

export type Region = 'us' | 'eu';
/**
 * What a rule counts by: the client IP, a verified API key (the spec's `x-api-key`: any header carrying a
 * key, PAT or service key), or the user of a verified session with the IP (the spec's `x-user-id`).
 */
export type IdentityKind = 'ip' | 'api-key' | 'user-ip';

export interface Quota {
  limit: number;
  windowSeconds: number;
}

export type PathMatch =
  | { kind: 'any' }
  | { kind: 'exact'; path: string }
  /** the path itself or anything under it */
  | { kind: 'prefix'; path: string }
  | { kind: 'contains'; segment: string }
  | { kind: 'ends'; suffix: string }
  | { kind: 'regex'; pattern: RegExp; describe: string };

export interface Matcher {
  /** Only this method; absent: every method. */
  method?: string;
  path: PathMatch;
}

/**
 * Precedence rank: method-specific rows (3) over path rows for every method (2) over the defaults for a
 * key or a user (1) over the catch-all for any IP (0). Within a rank the table's order decides.
 */
export type Rank = 0 | 1 | 2 | 3;

export interface RateLimitRule {
  /** Stable id: the counter key and RATE_LIMIT_OVERRIDES use it. */
  id: string;
  /** The table's "Match (method)" cell, for messages and docs. */
  match: string;
  category: string;
  identity: IdentityKind;
  /** A request matches the row when any matcher matches; the row's matchers share one counter. */
  matchers: Matcher[];
  rank: Rank;
  us: Quota;
  eu: Quota;
}

const q = (limit: number, windowSeconds: number): Quota => ({ limit, windowSeconds });
const same = (limit: number, windowSeconds: number) => ({ us: q(limit, windowSeconds), eu: q(limit, windowSeconds) });
const UUID = /^\/runs\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Rank of a row from its matchers. A row naming a method anywhere in its cell is method-specific, also
 * when it lists method-less paths beside it ("OPTIONS, /info, ...", "DELETE /sessions or *\/trigger").
 */
function rankOf(matchers: Matcher[]): Rank {
  if (matchers.some((m) => m.method !== undefined)) return 3;
  return matchers.every((m) => m.path.kind === 'any') ? 1 : 2;
}

function row(id: string, match: string, category: string, identity: IdentityKind, matchers: Matcher[], quotas: { us: Quota; eu: Quota }, rank?: Rank): RateLimitRule {
  return { id, match, category, identity, matchers, rank: rank ?? rankOf(matchers), ...quotas };
}

/** Every row of the spec's table, in the table's order. */
export const RATE_LIMIT_RULES: readonly RateLimitRule[] = [
  row(
    'high-throughput-ip',
    'OPTIONS, /info, */v1/metadata/submit',
    'High throughput',
    'ip',
    [{ method: 'OPTIONS', path: { kind: 'any' } }, { path: { kind: 'ends', suffix: '/info' } }, { path: { kind: 'ends', suffix: '/v1/metadata/submit' } }],
    same(2000, 10),
  ),
  row('auth-api-key', '/auth', 'High throughput', 'api-key', [{ path: { kind: 'ends', suffix: '/auth' } }], same(2000, 10)),
  row('auth-user', '/auth', 'High throughput', 'user-ip', [{ path: { kind: 'ends', suffix: '/auth' } }], same(2000, 10)),
  row('beacon-ip', '/v1/beacon', 'High throughput', 'ip', [{ path: { kind: 'ends', suffix: '/v1/beacon' } }], same(2000, 10)),
  row('repos-api-key', '/repos', 'Repository', 'api-key', [{ path: { kind: 'contains', segment: '/repos' } }], same(100, 60)),
  row('repos-user', '/repos', 'Repository', 'user-ip', [{ path: { kind: 'contains', segment: '/repos' } }], same(100, 60)),
  row('runs-batch-api-key', 'POST /runs/batch', 'High throughput', 'api-key', [{ method: 'POST', path: { kind: 'exact', path: '/runs/batch' } }], same(2000, 10)),
  // `/otel` is the same endpoint as the Python SDK's OTEL mode calls it.
  row('otel-traces-api-key', 'POST /otel/v1/traces', 'Run ingest', 'api-key', [{ method: 'POST', path: { kind: 'exact', path: '/otel/v1/traces' } }, { method: 'POST', path: { kind: 'exact', path: '/otel' } }], same(2000, 10)),
  row('charts-api-key', 'POST containing /charts', 'Charts', 'api-key', [{ method: 'POST', path: { kind: 'contains', segment: '/charts' } }], same(750, 600)),
  row('charts-user', 'POST containing /charts', 'Charts', 'user-ip', [{ method: 'POST', path: { kind: 'contains', segment: '/charts' } }], same(750, 600)),
  row('runs-multipart-api-key', 'POST /runs/multipart', 'Multipart ingest', 'api-key', [{ method: 'POST', path: { kind: 'exact', path: '/runs/multipart' } }], same(6000, 10)),
  row('runs-query-api-key', 'POST /runs/query', 'Run query (API)', 'api-key', [{ method: 'POST', path: { kind: 'exact', path: '/runs/query' } }], same(15, 10)),
  row('runs-query-user', 'POST /runs/query', 'Run query (User)', 'user-ip', [{ method: 'POST', path: { kind: 'exact', path: '/runs/query' } }], same(300, 10)),
  row('generate-api-key', '/generate', 'Generation', 'api-key', [{ path: { kind: 'contains', segment: '/generate' } }], same(30, 3600)),
  row('generate-user', '/generate', 'Generation', 'user-ip', [{ path: { kind: 'contains', segment: '/generate' } }], same(30, 3600)),
  row('commits-api-key', '/commits', 'Commits', 'api-key', [{ path: { kind: 'contains', segment: '/commits' } }], { us: q(10000, 60), eu: q(2000, 60) }),
  row('commits-user', '/commits', 'Commits', 'user-ip', [{ path: { kind: 'contains', segment: '/commits' } }], { us: q(10000, 60), eu: q(2000, 60) }),
  row(
    'deletion-api-key',
    'DELETE /sessions or */trigger',
    'Deletion',
    'api-key',
    [{ method: 'DELETE', path: { kind: 'prefix', path: '/sessions' } }, { path: { kind: 'ends', suffix: '/trigger' } }],
    same(10, 60),
  ),
  row(
    'deletion-user',
    'DELETE /sessions or */trigger',
    'Deletion',
    'user-ip',
    [{ method: 'DELETE', path: { kind: 'prefix', path: '/sessions' } }, { path: { kind: 'ends', suffix: '/trigger' } }],
    same(30, 60),
  ),
  row('runs-create-api-key', 'POST /runs (single run)', 'Run ingest', 'api-key', [{ method: 'POST', path: { kind: 'exact', path: '/runs' } }], same(2000, 10)),
  row('runs-patch-api-key', 'PATCH containing /runs', 'Run ingest', 'api-key', [{ method: 'PATCH', path: { kind: 'contains', segment: '/runs' } }], same(2000, 10)),
  row('feedback-api-key', 'POST /feedback', 'High throughput', 'api-key', [{ method: 'POST', path: { kind: 'exact', path: '/feedback' } }], same(2000, 10)),
  row('run-lookup-api-key', 'GET /runs/{uuid} or /api/v1/runs/{uuid}', 'Run lookup', 'api-key', [{ method: 'GET', path: { kind: 'regex', pattern: UUID, describe: '/runs/{uuid}' } }], same(30, 60)),
  row('examples-api-key', 'GET containing /examples', 'Examples', 'api-key', [{ method: 'GET', path: { kind: 'contains', segment: '/examples' } }], same(5000, 60)),
  row('default-api-key', 'Any request with x-api-key', 'Default (API key)', 'api-key', [{ path: { kind: 'any' } }], same(1000, 10)),
  row('default-user', 'Any request with x-user-id', 'Default (User)', 'user-ip', [{ path: { kind: 'any' } }], same(1000, 10)),
  row('public-download-ip', '/public/download', 'Public download', 'ip', [{ path: { kind: 'ends', suffix: '/public/download' } }], same(5000, 60)),
  row('stats-api-key', '/runs/stats', 'Stats', 'api-key', [{ path: { kind: 'exact', path: '/runs/stats' } }], { us: q(1, 10), eu: q(20, 10) }),
  row('catch-all-ip', 'All other IPs (catch-all)', 'Public (catch-all)', 'ip', [{ path: { kind: 'any' } }], same(100, 60), 0),
];

/** The rules in the order they are tried: rank first, then the table's order. */
const ORDERED = [...RATE_LIMIT_RULES].map((rule, index) => ({ rule, index })).sort((a, b) => b.rule.rank - a.rule.rank || a.index - b.index).map((x) => x.rule);

const API_PREFIX = /^\/api(?:\/v1)?(?=\/)/;

function pathMatches(m: PathMatch, raw: string, stripped: string): boolean {
  switch (m.kind) {
    case 'any':
      return true;
    case 'exact':
      return stripped === m.path;
    case 'prefix':
      return stripped === m.path || stripped.startsWith(m.path + '/');
    case 'contains':
      return (raw + '/').includes(m.segment + '/');
    case 'ends':
      return raw.endsWith(m.suffix);
    case 'regex':
      return m.pattern.test(stripped);
  }
}

export interface RequestTraits {
  method: string;
  /** The path without the query string. */
  path: string;
  /** The request carries a verified API key, PAT or service key. */
  hasApiKey: boolean;
  /** The request carries a verified user session. */
  hasUserId: boolean;
}

/** A request's method and path in the forms the matchers compare (computed once per request). */
interface MatchInput {
  method: string;
  raw: string;
  stripped: string;
}

function matchInput(method: string, path: string): MatchInput {
  const raw = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return { method: method.toUpperCase(), raw, stripped: raw.replace(API_PREFIX, '') };
}

function matches(rule: RateLimitRule, x: MatchInput): boolean {
  for (const m of rule.matchers) if ((m.method === undefined || m.method === x.method) && pathMatches(m.path, x.raw, x.stripped)) return true;
  return false;
}

/** Whether a rule's method and path cells match, ignoring its identity key. */
export function ruleMatches(rule: RateLimitRule, method: string, path: string): boolean {
  return matches(rule, matchInput(method, path));
}

/**
 * The one rule that counts this request: the first, by rank and then table order, whose method and path
 * match and whose identity key the request carries. An API key wins over a user id when both are sent
 * (each pair of rows lists the key's row first). The catch-all always matches.
 */
export function selectRule(req: RequestTraits): RateLimitRule {
  const x = matchInput(req.method, req.path);
  for (const rule of ORDERED) {
    if (rule.identity === 'api-key' && !req.hasApiKey) continue;
    if (rule.identity === 'user-ip' && !req.hasUserId) continue;
    if (matches(rule, x)) return rule;
  }
  return RATE_LIMIT_RULES[RATE_LIMIT_RULES.length - 1];
}

export function quotaOf(rule: RateLimitRule, region: Region): Quota {
  return region === 'eu' ? rule.eu : rule.us;
}
