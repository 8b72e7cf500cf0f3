import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { DataSource } from 'typeorm';
import { signSessionToken } from '@th/auth';
import { openServiceDataSource } from '@th/database';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, IdentityService, MemoryCounterStore, RATE_LIMIT_RULES, RateLimiter } from '@th/gateway';
import {
  SPEC_RATE_LIMIT_ROWS,
  createTestDatabase,
  freePort,
  rowProbe,
  startAppProcess,
  sharedKafka,
  walkRateLimitRow,
  type AppProcess,
  type KafkaServer,
  type ProbeCredentials,
  type RateLimitTarget,
} from '@th/testing';

/**
 * The cluster gateway as OS processes with its counters in the machine's Redis: two replicas share
 * them (the walk alternates between the replicas), and Redis down fails open or closed as configured.
 * Upstream services are not started: the limiter answers before the proxy, and a request under the
 * limit that reaches the proxy gets 502 (or the gateway's own answer). Probes carry real credentials
 * (keys of fresh organizations in the gateway's database, sessions signed with its secret).
 * Needs `npm run build`.
 */
const REDIS_URL = 'redis://127.0.0.1:6379';
const REGION = 'eu';

describe('rate limits, cluster gateway (counters in Redis)', () => {
  const runTag = randomBytes(4).toString('hex');
  const prefix = `th:test:rl:${runTag}:`;
  let work: string;
  let kafka: KafkaServer;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let env: Record<string, string>;
  const procs: AppProcess[] = [];
  let replicas: AppProcess[];
  let redis: Redis;
  let gatewayDb: DataSource;
  let identity: IdentityService;
  const SESSION_SECRET = `rl-session-secret-${runTag}-0123456789abcdef`;

  const gateway = async (extra: Record<string, string>) => {
    const p = await startAppProcess('gateway', { ...env, ...extra });
    procs.push(p);
    return p;
  };

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'th-rl-'));
    kafka = await sharedKafka();
    db = await createTestDatabase('th_rl');
    const closed = await freePort();
    env = {
      INTERNAL_SIGNING_KEY: randomBytes(24).toString('hex'),
      KAFKA_BROKERS: kafka.brokers,
      DATABASE_URL: db.url,
      INGEST_URL: `http://127.0.0.1:${closed}`,
      QUERY_URL: `http://127.0.0.1:${closed}`,
      BOOTSTRAP_API_KEY: `th_rl_${runTag}`,
      RATE_LIMIT_ENABLED: 'true',
      RATE_LIMIT_REGION: REGION,
      RATE_LIMIT_TRUSTED_PROXIES: '1',
      RATE_LIMIT_KEY_PREFIX: prefix,
      SESSION_SECRET,
    };
    replicas = [await gateway({ REDIS_URL }), await gateway({ REDIS_URL })];
    redis = new Redis(REDIS_URL);
    gatewayDb = await openServiceDataSource({ url: db.url, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
    identity = new IdentityService(gatewayDb, { sessionSecret: SESSION_SECRET });
  }, 240_000);

  afterAll(async () => {
    for (const p of procs) await p.stop();
    if (redis) {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
    await gatewayDb?.destroy();
    await kafka?.stop();
    await db?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 120_000);

  /** Computes counter keys exactly as the gateways do (same prefix, proxy setting and credential check). */
  const keys = new RateLimiter({
    store: new MemoryCounterStore(),
    principals: { rateLimitPrincipal: (headers) => identity.rateLimitPrincipal(headers) },
    region: REGION,
    failMode: 'open',
    trustedProxies: 1,
    keyPrefix: prefix,
  });
  afterAll(() => keys.close());
  const counterKey = async (ruleId: string, headers: Record<string, string>): Promise<string> => {
    const rule = RATE_LIMIT_RULES.find((r) => r.id === ruleId);
    if (!rule) throw new Error(`no rule ${ruleId}`);
    return keys.counterKey(rule, { headers, remoteAddress: '127.0.0.1' }, await keys.principal(headers));
  };

  /** A fresh caller: its own organization's key and a session of a fresh user. */
  const credentials = async (): Promise<ProbeCredentials> => {
    const org = await identity.createOrganization({ name: `rl-${runTag}` });
    return { apiKey: org.api_key, sessionToken: await signSessionToken({ user_id: randomUUID(), organization_id: org.organization_id }, SESSION_SECRET, 600) };
  };

  let turn = 0;
  const target: RateLimitTarget = {
    send: (p) => {
      const url = replicas[turn++ % replicas.length].url;
      return fetch(`${url}${p.path}`, { method: p.method, headers: p.headers, body: p.method === 'POST' || p.method === 'PATCH' ? '{}' : undefined });
    },
    preload: async (ruleId, p, count, windowSeconds) => {
      await redis.set(await counterKey(ruleId, p.headers), String(count), 'PX', windowSeconds * 1000);
    },
  };

  it.each(SPEC_RATE_LIMIT_ROWS.map((row, index) => [`${row.match} by ${row.key}`, row, index] as const))('%s, across two replicas', async (_name, row, index) => {
    const creds = await credentials();
    const probe = rowProbe(row, index, runTag, creds);
    const walk = await walkRateLimitRow(target, row, REGION, probe);
    const [limit, windowSeconds] = row[REGION];
    expect(walk.allowed.map((r) => r.status).filter((s) => s === 429)).toEqual([]);
    expect(walk.allowed.map((r) => r.remaining)).toEqual(walk.allowed.map((_, i) => String(walk.allowed.length - 1 - i)));
    expect(walk.allowed.every((r) => r.limit === String(limit) && r.policy === `${limit};w=${windowSeconds}`)).toBe(true);
    expect(walk.over).toMatchObject({ status: 429, limit: String(limit), remaining: '0', policy: `${limit};w=${windowSeconds}` });
    expect(Number(walk.over.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(walk.over.retryAfter)).toBeLessThanOrEqual(windowSeconds);
    // The counter lives in Redis under the row's key, with the row's window.
    const key = await counterKey(row.ruleId, probe.headers);
    expect(Number(await redis.get(key))).toBe(limit + 1);
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(windowSeconds * 1000);
  });

  it('keeps API keys out of Redis (counted by their id)', async () => {
    const stored = await redis.keys(`${prefix}*`);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored.filter((k) => k.includes('th_'))).toEqual([]);
  });

  it('counts a key in one bucket whichever header carries it, and rotating junk keys or user ids by IP, across replicas', async () => {
    const { apiKey } = await credentials();
    const send = async (headers: Record<string, string>) => (await target.send({ method: 'POST', path: '/api/v1/runs/query', headers: { 'content-type': 'application/json', ...headers } })).status;
    const byKey: number[] = [];
    for (let i = 0; i < 16; i++) byKey.push(await send({ 'x-forwarded-for': '10.95.0.1', ...(i % 2 ? { authorization: `Bearer ${apiKey}` } : { 'x-api-key': apiKey }), 'x-user-id': randomUUID() }));
    expect(byKey.slice(0, 15).filter((s) => s === 429)).toEqual([]);
    expect(byKey[15]).toBe(429);
    const junk = { 'x-forwarded-for': '10.95.0.2' };
    await target.preload('catch-all-ip', { method: 'POST', path: '/api/v1/runs/query', headers: junk }, 95, 60);
    const rotating: number[] = [];
    for (let i = 0; i < 10; i++) rotating.push(await send({ ...junk, ...(i % 2 ? { 'x-api-key': `th_junk_${randomUUID()}` } : { 'x-user-id': randomUUID() }) }));
    expect(rotating.filter((s) => s !== 429)).toHaveLength(5);
  });

  it('fails open when Redis is down, and logs it', async () => {
    const down = await gateway({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, RATE_LIMIT_FAIL_MODE: 'open', RATE_LIMIT_REDIS_TIMEOUT_MS: '100' });
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${down.url}/api/v1/runs/stats`, { method: 'POST', headers: { 'x-api-key': `th_rl_open_${runTag}`, 'content-type': 'application/json' }, body: '{}' });
      await r.text();
      expect(r.headers.get('ratelimit-limit')).toBeNull();
      statuses.push(r.status);
    }
    // /runs/stats allows 20 per 10 s in the EU (1 in the US): three calls pass only because the limiter fails open.
    expect(statuses.filter((s) => s === 429 || s === 503)).toEqual([]);
    expect(down.log()).toMatch(/rate-limit counter store \(redis\) failed: .*failing open/);
    expect(down.log()).toMatch(/rate-limit Redis connection: .*ECONNREFUSED/);
  });

  it('fails closed with 503 and Retry-After when so configured, and logs it', async () => {
    const down = await gateway({ REDIS_URL: `redis://127.0.0.1:${await freePort()}`, RATE_LIMIT_FAIL_MODE: 'closed', RATE_LIMIT_REDIS_TIMEOUT_MS: '100' });
    const r = await fetch(`${down.url}/api/v1/sessions`, { headers: { 'x-api-key': `th_rl_${runTag}` } });
    expect(r.status).toBe(503);
    expect(r.headers.get('retry-after')).toBe('1');
    expect(await r.json()).toEqual({ detail: 'Rate limiting is unavailable; retry shortly' });
    const health = await fetch(`${down.url}/health/ready`);
    await health.text();
    expect(health.status).toBe(200);
    expect(down.log()).toMatch(/rate-limit counter store \(redis\) failed: .*failing closed/);
  });

  it('refuses to start with rate limits on and no REDIS_URL', async () => {
    await expect(startAppProcess('gateway', env, { timeoutMs: 60_000 })).rejects.toThrow(/REDIS_URL: required while RATE_LIMIT_ENABLED is true/);
  });
});
