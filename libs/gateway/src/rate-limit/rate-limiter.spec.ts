import { randomBytes } from 'node:crypto';
import { freePort } from '@th/platform';
import { MemoryCounterStore, RedisCounterStore } from './counter-store';
import { RateLimiter, type FailMode, type PrincipalResolver, type RateLimitPrincipal } from './rate-limiter';

const req = (headers: Record<string, string> = {}, path = '/api/v1/runs/query', method = 'POST') => ({ method, path, headers, remoteAddress: '::ffff:127.0.0.1' });

class CollectingLogger {
  readonly lines: { level: string; msg: string }[] = [];
  error(m: { msg: string }) {
    this.lines.push({ level: 'error', msg: m.msg });
  }
  warn(m: { msg: string }) {
    this.lines.push({ level: 'warn', msg: m.msg });
  }
  log(m: { msg: string }) {
    this.lines.push({ level: 'info', msg: m.msg });
  }
}

/**
 * Credentials known to this test: keys k* (also as Bearer), sessions s-* for a user; anything else is
 * invalid. IdentityService, which verifies them for real, is tested in identity.service.spec.ts.
 */
const principals: PrincipalResolver = {
  rateLimitPrincipal(headers): RateLimitPrincipal | Promise<RateLimitPrincipal> {
    const auth = typeof headers.authorization === 'string' ? headers.authorization.replace(/^Bearer /, '') : undefined;
    const raw = (headers['x-api-key'] as string | undefined) ?? auth;
    if (raw === undefined) return null;
    if (/^k\d$/.test(raw)) return { kind: 'api-key', id: `id-of-${raw}` };
    // Answered later, as a cache miss would be.
    if (raw.startsWith('s-')) return Promise.resolve({ kind: 'user', id: `user ${raw.slice(2)}` });
    return null;
  },
};

describe('RateLimiter', () => {
  const memory = (extra: Partial<ConstructorParameters<typeof RateLimiter>[0]> = {}) =>
    new RateLimiter({ store: new MemoryCounterStore(), principals, region: 'us', failMode: 'open', trustedProxies: 0, keyPrefix: 'p:', ...extra });

  it('counts POST /runs/query per API key: 15 allowed, the 16th limited', async () => {
    const limiter = memory();
    const decisions = [];
    for (let i = 0; i < 16; i++) decisions.push(await limiter.check(req({ 'x-api-key': 'k1' })));
    expect(decisions.map((d) => d.kind)).toEqual([...Array(15).fill('allowed'), 'limited']);
    expect(decisions.map((d) => (d.kind === 'store-down' ? -1 : d.remaining))).toEqual([14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]);
    expect((await limiter.check(req({ 'x-api-key': 'k2' }))).kind).toBe('allowed');
    await limiter.close();
  });

  it('applies an operator override of one row', async () => {
    const limiter = memory({ overrides: { 'runs-query-api-key': { limit: 2, windowSeconds: 5 } } });
    const kinds = [];
    for (let i = 0; i < 3; i++) kinds.push((await limiter.check(req({ 'x-api-key': 'k1' }))).kind);
    expect(kinds).toEqual(['allowed', 'allowed', 'limited']);
    await limiter.close();
  });

  it('finds the client behind trusted proxies, and ignores X-Forwarded-For without them', () => {
    const headers = { 'x-forwarded-for': '203.0.113.7, 10.0.0.2' };
    expect(memory().clientIp({ headers, remoteAddress: '::ffff:10.0.0.1' })).toBe('10.0.0.1');
    expect(memory({ trustedProxies: 1 }).clientIp({ headers, remoteAddress: '10.0.0.1' })).toBe('10.0.0.2');
    expect(memory({ trustedProxies: 2 }).clientIp({ headers, remoteAddress: '10.0.0.1' })).toBe('203.0.113.7');
    expect(memory({ trustedProxies: 5 }).clientIp({ headers, remoteAddress: '10.0.0.1' })).toBe('203.0.113.7');
  });

  it('keys an API key by its id, a user by user id and IP, and nobody by IP', () => {
    const limiter = memory();
    const at = { headers: {}, remoteAddress: '1.2.3.4' };
    const key = limiter.counterKey(limiter.ruleFor(req(), { kind: 'api-key', id: 'key-id' }), at, { kind: 'api-key', id: 'key-id' });
    expect(key).toBe('p:runs-query-api-key:key-id');
    const user = { kind: 'user', id: 'u 1' } as const;
    expect(limiter.counterKey(limiter.ruleFor(req(), user), at, user)).toBe('p:runs-query-user:u%201@1.2.3.4');
    expect(limiter.counterKey(limiter.ruleFor(req(), null), at, null)).toBe('p:catch-all-ip:1.2.3.4');
  });

  it('counts a key sent as Authorization: Bearer in the same bucket as X-API-Key', async () => {
    const limiter = memory();
    const kinds = [];
    for (let i = 0; i < 16; i++) kinds.push((await limiter.check(req(i % 2 ? { authorization: 'Bearer k1' } : { 'x-api-key': 'k1' }))).kind);
    expect(kinds).toEqual([...Array(15).fill('allowed'), 'limited']);
    await limiter.close();
  });

  it('ignores x-user-id without a valid session: 40 random user ids share the IP catch-all', async () => {
    const limiter = memory();
    const decisions = [];
    for (let i = 0; i < 40; i++) decisions.push(await limiter.check(req({ 'x-user-id': `random-${i}-${Math.random()}` })));
    expect(decisions.map((d) => (d.kind === 'store-down' ? d.kind : d.rule.id))).toEqual(Array(40).fill('catch-all-ip'));
    expect(decisions.filter((d) => d.kind === 'allowed')).toHaveLength(40); // 100 per 60 s
    await limiter.close();
  });

  it('counts a session by its user whatever x-user-id says', async () => {
    const limiter = memory({ overrides: { 'runs-query-user': { limit: 15, windowSeconds: 10 } } });
    const kinds = [];
    for (let i = 0; i < 40; i++) kinds.push((await limiter.check(req({ authorization: 'Bearer s-alice', 'x-user-id': `random-${i}` }))).kind);
    expect(kinds.filter((k) => k === 'allowed')).toHaveLength(15);
    const d = await limiter.check(req({ authorization: 'Bearer s-bob' }));
    expect(d.kind === 'allowed' && d.rule.id).toBe('runs-query-user');
    await limiter.close();
  });

  it('counts rotating invalid keys by IP: the catch-all stops them at its limit', async () => {
    const limiter = memory();
    const kinds = [];
    for (let i = 0; i < 101; i++) kinds.push((await limiter.check(req({ 'x-api-key': `junk-${i}` }))).kind);
    expect(kinds).toEqual([...Array(100).fill('allowed'), 'limited']);
    // The same junk as Bearer, and a random x-user-id, are the same IP.
    expect((await limiter.check(req({ authorization: 'Bearer junk-x', 'x-user-id': 'u' }))).kind).toBe('limited');
    // A valid key from that IP still has its own bucket.
    expect((await limiter.check(req({ 'x-api-key': 'k3' }))).kind).toBe('allowed');
    await limiter.close();
  });

  describe.each(['open', 'closed'] as FailMode[])('with Redis down (fail %s)', (failMode) => {
    it('reports store-down with the configured mode and logs one line for many failures', async () => {
      const logger = new CollectingLogger();
      const store = new RedisCounterStore({ url: `redis://127.0.0.1:${await freePort()}`, commandTimeoutMs: 100, connectTimeoutMs: 200, onError: () => undefined, onReady: () => undefined });
      const limiter = new RateLimiter({ store, principals, region: 'us', failMode, trustedProxies: 0, keyPrefix: `th:test:${randomBytes(4).toString('hex')}:`, logger });
      try {
        const decisions = [];
        for (let i = 0; i < 20; i++) decisions.push(await limiter.check(req({ 'x-api-key': 'k1' })));
        expect(decisions.map((d) => (d.kind === 'store-down' ? d.failMode : d.kind))).toEqual(Array(20).fill(failMode));
        expect(logger.lines).toEqual([{ level: 'error', msg: expect.stringMatching(new RegExp(`^rate-limit counter store \\(redis\\) failed: .*; failing ${failMode}$`)) }]);
      } finally {
        await limiter.close();
      }
    });
  });
});
