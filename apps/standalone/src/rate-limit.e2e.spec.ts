import { randomBytes, randomUUID } from 'node:crypto';
import { signSessionToken } from '@th/auth';
import { IdentityService, RATE_LIMIT_RULES, type RateLimiter } from '@th/gateway';
import { SPEC_RATE_LIMIT_ROWS, rowProbe, walkRateLimitRow, type ProbeCredentials, type RateLimitProbe, type RateLimitTarget } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

/**
 * Every row of the spec's rate-limit table through the standalone service's HTTP path, in both regions,
 * with the spec's own values. Rows up to 30 requests are walked request by request; larger rows start
 * with their counter preloaded three short of the limit (the counter of the row the test expects: when
 * the limiter picks another row, the remaining count and the 429 do not come where the test expects).
 * Probes carry real credentials (a fresh organization's key, a signed session): the limiter counts
 * only verified ones as a key or a user.
 */
const SESSION_SECRET = `rl-session-secret-${randomBytes(16).toString('hex')}`;

function limiterOf(svc: TestStandalone): RateLimiter {
  if (!svc.rateLimiter) throw new Error('rate limiter is off');
  return svc.rateLimiter;
}

function targetFor(svc: TestStandalone): RateLimitTarget {
  return {
    send: (p) => fetch(`${svc.url}${p.path}`, { method: p.method, headers: p.headers, body: p.method === 'POST' || p.method === 'PATCH' ? '{}' : undefined }),
    preload: async (ruleId, p, count, windowSeconds) => {
      const rule = RATE_LIMIT_RULES.find((r) => r.id === ruleId);
      if (!rule) throw new Error(`no rule ${ruleId}`);
      const limiter = limiterOf(svc);
      const principal = await limiter.principal(p.headers);
      await limiter.store.preload(limiter.counterKey(rule, { headers: p.headers, remoteAddress: '127.0.0.1' }, principal), count, windowSeconds * 1000);
    },
  };
}

describe.each(['us', 'eu'] as const)('rate limits, standalone (counters in process), region %s', (region) => {
  let svc: TestStandalone;
  const runTag = randomBytes(4).toString('hex');

  beforeAll(async () => {
    svc = await startTestStandalone({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGION: region, RATE_LIMIT_TRUSTED_PROXIES: '1', SESSION_SECRET });
  });
  afterAll(() => svc?.close());

  /** A fresh caller: its own organization's key and a session of a fresh user. */
  const credentials = async (): Promise<ProbeCredentials & { apiKeyId: string }> => {
    const org = await svc.app.get(IdentityService).createOrganization({ name: `rl-${runTag}` });
    const sessionToken = await signSessionToken({ user_id: randomUUID(), organization_id: org.organization_id }, SESSION_SECRET, 600);
    return { apiKey: org.api_key, apiKeyId: org.api_key_id, sessionToken };
  };

  it.each(SPEC_RATE_LIMIT_ROWS.map((row, index) => [`${row.match} by ${row.key}`, row, index] as const))('%s', async (_name, row, index) => {
    const probe = rowProbe(row, index, runTag, await credentials());
    const walk = await walkRateLimitRow(targetFor(svc), row, region, probe);
    const [limit, windowSeconds] = row[region];
    expect(walk.allowed.length).toBe(walk.preloaded ? 3 : limit);
    walk.allowed.forEach((r, i) => {
      expect(r.status).not.toBe(429);
      expect(r.limit).toBe(String(limit));
      expect(r.policy).toBe(`${limit};w=${windowSeconds}`);
      expect(r.remaining).toBe(String(walk.allowed.length - 1 - i));
      expect(Number(r.reset)).toBeGreaterThanOrEqual(1);
      expect(Number(r.reset)).toBeLessThanOrEqual(windowSeconds);
    });
    expect(walk.over.status).toBe(429);
    expect(walk.over.limit).toBe(String(limit));
    expect(walk.over.remaining).toBe('0');
    expect(walk.over.policy).toBe(`${limit};w=${windowSeconds}`);
    const retryAfter = Number(walk.over.retryAfter);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(windowSeconds);
    expect(walk.over.reset).toBe(walk.over.retryAfter);
    expect(JSON.parse(walk.over.body)).toEqual({ detail: expect.stringContaining(`Rate limit exceeded: ${limit} requests per ${windowSeconds} s`) });

    // Another caller (another key, user and IP) has its own counter.
    const other: RateLimitProbe = rowProbe(row, index + 100, runTag, await credentials());
    const res = await targetFor(svc).send(other);
    await res.text();
    expect(res.status).not.toBe(429);
    expect(res.headers.get('ratelimit-remaining')).toBe(String(limit - 1));
  });

  it('counts a session by its user and IP together; x-user-id changes nothing', async () => {
    const row = SPEC_RATE_LIMIT_ROWS.find((r) => r.ruleId === 'runs-query-user');
    if (!row) throw new Error('row missing');
    const probe = rowProbe(row, 200, runTag, await credentials());
    await targetFor(svc).preload(row.ruleId, probe, row[region][0], row[region][1]);
    const send = async (headers: Record<string, string>) => {
      const r = await fetch(`${svc.url}/runs/query`, { method: 'POST', headers: { ...probe.headers, ...headers }, body: '{}' });
      await r.text();
      return r.status;
    };
    expect(await send({})).toBe(429);
    expect(await send({ 'x-user-id': `someone-else-${runTag}` })).toBe(429);
    expect(await send({ 'x-forwarded-for': '10.99.0.1' })).not.toBe(429);
    expect(await send({ authorization: `Bearer ${(await credentials()).sessionToken}` })).not.toBe(429);
  });

  /** POST /runs/query from one client address, `n` times with the headers of each call; the statuses. */
  const queries = async (n: number, headers: (i: number) => Record<string, string>): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${svc.url}/api/v1/runs/query`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers(i) }, body: '{}' });
      await r.text();
      statuses.push(r.status);
    }
    return statuses;
  };
  const allowed = (statuses: number[]) => statuses.filter((s) => s !== 429).length;

  it('counts a key sent as Authorization: Bearer in the bucket of the same key as X-API-Key', async () => {
    const { apiKey } = await credentials();
    const ip = `10.96.${region === 'us' ? 1 : 2}.1`;
    const statuses = await queries(16, (i) => ({ 'x-forwarded-for': ip, ...(i % 2 ? { authorization: `Bearer ${apiKey}` } : { 'x-api-key': apiKey }) }));
    expect(statuses.slice(0, 15).filter((s) => s === 429)).toEqual([]);
    expect(statuses[15]).toBe(429);
  });

  it('40 queries with a random x-user-id each are limited at the row of the credential', async () => {
    const { apiKey, sessionToken } = await credentials();
    const ip = `10.96.${region === 'us' ? 3 : 4}.1`;
    // With a key: the key's row, 15 per 10 s.
    expect(allowed(await queries(40, () => ({ 'x-forwarded-for': ip, 'x-api-key': apiKey, 'x-user-id': randomUUID() })))).toBe(15);
    // With a session: the user's row (300 per 10 s), whose counter is 290 already.
    const userRow = SPEC_RATE_LIMIT_ROWS.find((r) => r.ruleId === 'runs-query-user');
    if (!userRow) throw new Error('row missing');
    const session = { method: 'POST', path: '/api/v1/runs/query', headers: { 'x-forwarded-for': ip, authorization: `Bearer ${sessionToken}` } };
    await targetFor(svc).preload(userRow.ruleId, session, 290, 10);
    expect(allowed(await queries(40, () => ({ ...session.headers, 'x-user-id': randomUUID() })))).toBe(10);
    // Without credentials: the IP catch-all (100 per 60 s), whose counter is 90 already.
    const anonymous = { method: 'POST', path: '/api/v1/runs/query', headers: { 'x-forwarded-for': `10.96.${region === 'us' ? 5 : 6}.1` } };
    await targetFor(svc).preload('catch-all-ip', anonymous, 90, 60);
    expect(allowed(await queries(40, () => ({ ...anonymous.headers, 'x-user-id': randomUUID() })))).toBe(10);
  });

  it('rotating invalid keys (either header) or user ids from one address hit the IP catch-all', async () => {
    const ip = `10.96.${region === 'us' ? 7 : 8}.1`;
    const rotations: (() => Record<string, string>)[] = [
      () => ({ 'x-api-key': `th_junk_${randomUUID()}` }),
      () => ({ authorization: `Bearer th_junk_${randomUUID()}` }),
      () => ({ 'x-user-id': randomUUID() }),
    ];
    const statuses = await queries(101, (i) => ({ 'x-forwarded-for': ip, ...rotations[i % 3]() }));
    expect(statuses.slice(0, 100).filter((s) => s === 429)).toEqual([]);
    expect(new Set(statuses.slice(0, 100))).toEqual(new Set([401]));
    expect(statuses[100]).toBe(429);
    // A valid key from the same address keeps its own bucket.
    const { apiKey } = await credentials();
    expect((await queries(1, () => ({ 'x-forwarded-for': ip, 'x-api-key': apiKey })))[0]).not.toBe(429);
  });

  it('refuses a run over the limit without writing it; the last run under the limit is stored', async () => {
    const row = SPEC_RATE_LIMIT_ROWS.find((r) => r.ruleId === 'runs-create-api-key');
    if (!row) throw new Error('row missing');
    const [limit, windowSeconds] = row[region];
    const headers = { 'x-api-key': svc.apiKey, 'x-forwarded-for': '10.98.0.1', 'content-type': 'application/json' };
    await targetFor(svc).preload(row.ruleId, { method: 'POST', path: '/runs', headers }, limit - 1, windowSeconds);
    const run = () => {
      const id = randomUUID();
      return { id, body: JSON.stringify({ id, name: 'rl', run_type: 'chain', start_time: new Date().toISOString(), inputs: {}, session_name: `rl-${runTag}` }) };
    };
    const a = run();
    const b = run();
    const first = await fetch(`${svc.url}/api/v1/runs`, { method: 'POST', headers, body: a.body });
    expect(first.status).toBe(202);
    expect(first.headers.get('ratelimit-remaining')).toBe('0');
    const refused = await fetch(`${svc.url}/api/v1/runs`, { method: 'POST', headers, body: b.body });
    expect(refused.status).toBe(429);
    await refused.text();
    const stored = await svc.api(`/api/v1/runs/${a.id}`, { headers: { 'x-forwarded-for': '10.98.0.2' } });
    expect(stored.status).toBe(200);
    expect(((await stored.json()) as { id: string }).id).toBe(a.id);
    const missing = await svc.api(`/api/v1/runs/${b.id}`, { headers: { 'x-forwarded-for': '10.98.0.2' } });
    expect(missing.status).toBe(404);
    await missing.text();
  });

  it('never limits the health probes', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${svc.url}/health/live`);
      await r.text();
      statuses.push(r.status);
      expect(r.headers.get('ratelimit-limit')).toBeNull();
    }
    expect(statuses).toEqual([200, 200, 200]);
  });
});

describe('rate limits off (RATE_LIMIT_ENABLED=false)', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  });
  afterAll(() => svc?.close());

  it('sends no RateLimit headers and never answers 429', async () => {
    expect(svc.rateLimiter).toBeNull();
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await svc.api('/api/v1/runs/stats', { method: 'POST', json: {} });
      await r.text();
      expect(r.headers.get('ratelimit-limit')).toBeNull();
      statuses.push(r.status);
    }
    expect(statuses.filter((s) => s === 429)).toEqual([]);
  });
});
