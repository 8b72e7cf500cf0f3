import { randomBytes, randomUUID } from 'node:crypto';
import { RATE_LIMIT_RULES, type RateLimiter } from '@th/gateway';
import { SPEC_RATE_LIMIT_ROWS, rowProbe, walkRateLimitRow, type RateLimitProbe, type RateLimitTarget } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

/**
 * Every row of the spec's rate-limit table through the standalone service's HTTP path, in both regions,
 * with the spec's own values. Rows up to 30 requests are walked request by request; larger rows start
 * with their counter preloaded three short of the limit (the counter of the row the test expects: when
 * the limiter picks another row, the remaining count and the 429 do not come where the test expects).
 */

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
      await limiter.store.preload(limiter.counterKey(rule, { headers: p.headers, remoteAddress: '127.0.0.1' }), count, windowSeconds * 1000);
    },
  };
}

describe.each(['us', 'eu'] as const)('rate limits, standalone (counters in process), region %s', (region) => {
  let svc: TestStandalone;
  const runTag = randomBytes(4).toString('hex');

  beforeAll(async () => {
    svc = await startTestStandalone({ RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_REGION: region, RATE_LIMIT_TRUSTED_PROXIES: '1' });
  });
  afterAll(() => svc?.close());

  it.each(SPEC_RATE_LIMIT_ROWS.map((row, index) => [`${row.match} by ${row.key}`, row, index] as const))('%s', async (_name, row, index) => {
    const probe = rowProbe(row, index, runTag);
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
    const other: RateLimitProbe = rowProbe(row, index + 100, runTag);
    const res = await targetFor(svc).send(other);
    await res.text();
    expect(res.status).not.toBe(429);
    expect(res.headers.get('ratelimit-remaining')).toBe(String(limit - 1));
  });

  it('counts a user by user id and IP together', async () => {
    const row = SPEC_RATE_LIMIT_ROWS.find((r) => r.ruleId === 'runs-query-user');
    if (!row) throw new Error('row missing');
    const probe = rowProbe(row, 200, runTag);
    await targetFor(svc).preload(row.ruleId, probe, row[region][0], row[region][1]);
    const send = (headers: Record<string, string>) => fetch(`${svc.url}/runs/query`, { method: 'POST', headers: { ...probe.headers, ...headers }, body: '{}' });
    expect((await send({})).status).toBe(429);
    expect((await send({ 'x-forwarded-for': '10.99.0.1' })).status).not.toBe(429);
    expect((await send({ 'x-user-id': `someone-else-${runTag}` })).status).not.toBe(429);
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
