import { randomBytes } from 'node:crypto';
import { freePort } from '@th/platform';
import { MemoryCounterStore, RedisCounterStore } from './counter-store';
import { RateLimiter, type FailMode } from './rate-limiter';

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

describe('RateLimiter', () => {
  const memory = (extra: Partial<ConstructorParameters<typeof RateLimiter>[0]> = {}) =>
    new RateLimiter({ store: new MemoryCounterStore(), region: 'us', failMode: 'open', trustedProxies: 0, keyPrefix: 'p:', ...extra });

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
    for (let i = 0; i < 3; i++) kinds.push((await limiter.check(req({ 'x-api-key': 'k' }))).kind);
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

  it('keys an API key by its hash, a user by user id and IP', () => {
    const limiter = memory();
    const rule = limiter.ruleFor(req({ 'x-api-key': 'secret-key' }));
    const key = limiter.counterKey(rule, { headers: { 'x-api-key': 'secret-key' }, remoteAddress: '1.2.3.4' });
    expect(key).toMatch(/^p:runs-query-api-key:[0-9a-f]{32}$/);
    expect(key).not.toContain('secret-key');
    const userRule = limiter.ruleFor(req({ 'x-user-id': 'u 1' }));
    expect(limiter.counterKey(userRule, { headers: { 'x-user-id': 'u 1' }, remoteAddress: '1.2.3.4' })).toBe('p:runs-query-user:u%201@1.2.3.4');
  });

  describe.each(['open', 'closed'] as FailMode[])('with Redis down (fail %s)', (failMode) => {
    it('reports store-down with the configured mode and logs one line for many failures', async () => {
      const logger = new CollectingLogger();
      const store = new RedisCounterStore({ url: `redis://127.0.0.1:${await freePort()}`, commandTimeoutMs: 100, connectTimeoutMs: 200, onError: () => undefined, onReady: () => undefined });
      const limiter = new RateLimiter({ store, region: 'us', failMode, trustedProxies: 0, keyPrefix: `th:test:${randomBytes(4).toString('hex')}:`, logger });
      try {
        const decisions = [];
        for (let i = 0; i < 20; i++) decisions.push(await limiter.check(req({ 'x-api-key': 'k' })));
        expect(decisions.map((d) => (d.kind === 'store-down' ? d.failMode : d.kind))).toEqual(Array(20).fill(failMode));
        expect(logger.lines).toEqual([{ level: 'error', msg: expect.stringMatching(new RegExp(`^rate-limit counter store \\(redis\\) failed: .*; failing ${failMode}$`)) }]);
      } finally {
        await limiter.close();
      }
    });
  });
});
