import { SPEC_RATE_LIMIT_ROWS } from '@th/testing';
import { RATE_LIMIT_RULES, quotaOf, ruleMatches, selectRule, type RequestTraits } from './rate-limit.rules';

const UUID = '0190a3c2-7b1e-7c3d-9e4f-123456789abc';
const withKey = (method: string, path: string): RequestTraits => ({ method, path, hasApiKey: true, hasUserId: false });
const withUser = (method: string, path: string): RequestTraits => ({ method, path, hasApiKey: false, hasUserId: true });
const anonymous = (method: string, path: string): RequestTraits => ({ method, path, hasApiKey: false, hasUserId: false });

describe('the rate-limit table', () => {
  it('has every row of the spec, in order, with its identity key and its US and EU values', () => {
    expect(RATE_LIMIT_RULES.map((r) => ({ id: r.id, match: r.match, key: r.identity, us: [r.us.limit, r.us.windowSeconds], eu: [r.eu.limit, r.eu.windowSeconds] }))).toEqual(
      SPEC_RATE_LIMIT_ROWS.map((r) => ({ id: r.ruleId, match: r.match, key: r.key, us: r.us, eu: r.eu })),
    );
  });

  it('gives each row a distinct id (ids name the counters)', () => {
    expect(new Set(RATE_LIMIT_RULES.map((r) => r.id)).size).toBe(RATE_LIMIT_RULES.length);
  });

  it('chooses the column by region', () => {
    const commits = RATE_LIMIT_RULES.find((r) => r.id === 'commits-api-key');
    const stats = RATE_LIMIT_RULES.find((r) => r.id === 'stats-api-key');
    expect(commits && [quotaOf(commits, 'us'), quotaOf(commits, 'eu')]).toEqual([
      { limit: 10000, windowSeconds: 60 },
      { limit: 2000, windowSeconds: 60 },
    ]);
    expect(stats && [quotaOf(stats, 'us'), quotaOf(stats, 'eu')]).toEqual([
      { limit: 1, windowSeconds: 10 },
      { limit: 20, windowSeconds: 10 },
    ]);
  });

  it.each(SPEC_RATE_LIMIT_ROWS.map((r) => [r.ruleId, r] as const))('selects %s for its sample request', (_id, row) => {
    const traits = { method: row.sample.method, path: row.sample.path, hasApiKey: row.key === 'api-key', hasUserId: row.key === 'user-ip' };
    expect(selectRule(traits).id).toBe(row.ruleId);
  });
});

describe('OTLP at /otel', () => {
  it("shares the /otel/v1/traces row (the Python SDK's OTEL mode posts to /otel)", () => {
    expect(selectRule({ method: 'POST', path: '/otel', hasApiKey: true, hasUserId: false }).id).toBe('otel-traces-api-key');
  });
});

describe('rule precedence', () => {
  it.each([
    // method-specific over general
    ['OPTIONS preflight of a limited path counts by IP', withKey('OPTIONS', '/api/v1/runs/query'), 'high-throughput-ip'],
    ['POST /runs/query with a key', withKey('POST', '/runs/query'), 'runs-query-api-key'],
    ['POST /runs/query with a user', withUser('POST', '/api/v1/runs/query'), 'runs-query-user'],
    ['GET /runs/query is not the query row', withKey('GET', '/runs/query'), 'default-api-key'],
    ['an API key wins over a user id', { method: 'POST', path: '/runs/query', hasApiKey: true, hasUserId: true }, 'runs-query-api-key'],
    // specific path over the default
    ['GET /runs/{uuid} under /api/v1', withKey('GET', `/api/v1/runs/${UUID}`), 'run-lookup-api-key'],
    ['GET /runs/{uuid} under /api', withKey('GET', `/api/runs/${UUID}`), 'run-lookup-api-key'],
    ['GET /runs/{not a uuid} is the default', withKey('GET', '/runs/abc'), 'default-api-key'],
    ['PATCH /runs/{uuid}', withKey('PATCH', `/api/v1/runs/${UUID}`), 'runs-patch-api-key'],
    ['POST /runs/{uuid}/share is not the single-run row', withKey('POST', `/runs/${UUID}/share`), 'default-api-key'],
    ['POST /runs', withKey('POST', '/runs'), 'runs-create-api-key'],
    ['POST /runs/ with a trailing slash', withKey('POST', '/runs/'), 'runs-create-api-key'],
    ['DELETE /sessions (bulk)', withKey('DELETE', '/api/v1/sessions'), 'deletion-api-key'],
    ['DELETE /sessions/{id}', withUser('DELETE', `/sessions/${UUID}`), 'deletion-user'],
    ['GET /sessions/{id} is the default', withKey('GET', `/sessions/${UUID}`), 'default-api-key'],
    ['any method on */trigger', withKey('PUT', '/api/v1/webhooks/x/trigger'), 'deletion-api-key'],
    ['/runs/stats, any method', withKey('GET', '/api/v1/runs/stats'), 'stats-api-key'],
    ['/examples only for GET', withKey('POST', '/api/v1/examples'), 'default-api-key'],
    ['/charts only for POST', withKey('GET', '/api/v1/charts'), 'default-api-key'],
    ['segments, not substrings', withKey('GET', '/api/v1/repositories'), 'default-api-key'],
    // the prompt hub's paths as the langsmith clients call them
    ['GET /repos/ (list, trailing slash)', withKey('GET', '/api/v1/repos/'), 'repos-api-key'],
    ['POST /repos/{owner}/{repo}/tags', withKey('POST', '/api/v1/repos/-/p/tags'), 'repos-api-key'],
    ['PATCH /repos/{owner}/{repo} with a user', withUser('PATCH', '/api/v1/repos/h/p'), 'repos-user'],
    ['GET /commits/{owner}/{repo}/ (list)', withKey('GET', '/api/v1/commits/-/p/'), 'commits-api-key'],
    ['POST /commits/{owner}/{repo}', withKey('POST', '/api/v1/commits/h/p'), 'commits-api-key'],
    ['GET /commits/{owner}/{repo}/latest with a user', withUser('GET', '/commits/h/p/latest'), 'commits-user'],
    ['/info counts by IP even with a key', withKey('GET', '/info'), 'high-throughput-ip'],
    ['metadata submit under any prefix', anonymous('POST', '/api/v1/metadata/submit'), 'high-throughput-ip'],
    ['/v1/beacon by IP with a key', withKey('POST', '/v1/beacon'), 'beacon-ip'],
    ['/public/download by IP', withKey('GET', '/public/download'), 'public-download-ip'],
    // the catch-all for unauthenticated IPs
    ['a key-only row without a key falls to the catch-all', anonymous('POST', '/runs/batch'), 'catch-all-ip'],
    ['a key-only row with only a user id falls to the user default', withUser('POST', '/runs/batch'), 'default-user'],
    ['GET /runs/{uuid} with a user id is the user default', withUser('GET', `/runs/${UUID}`), 'default-user'],
    ['/runs/stats without a key', anonymous('POST', '/runs/stats'), 'catch-all-ip'],
    ['an unauthenticated GET /ok', anonymous('GET', '/ok'), 'catch-all-ip'],
  ] as const)('%s', (_name, traits, expected) => {
    expect(selectRule(traits).id).toBe(expected);
  });

  it('lets the rows of "OPTIONS, /info, */v1/metadata/submit" share one counter', () => {
    const rule = RATE_LIMIT_RULES[0];
    expect([ruleMatches(rule, 'OPTIONS', '/x'), ruleMatches(rule, 'GET', '/info'), ruleMatches(rule, 'POST', '/v1/metadata/submit'), ruleMatches(rule, 'GET', '/ok')]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });
});
