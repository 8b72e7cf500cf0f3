import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { freePort } from '@th/platform';
import { MemoryCounterStore, RedisCounterStore, type CounterStore } from './counter-store';

const REDIS_URL = 'redis://127.0.0.1:6379';
const prefix = `th:test:rl:${randomBytes(6).toString('hex')}:`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function redisStore(url = REDIS_URL, errors: Error[] = []): RedisCounterStore {
  return new RedisCounterStore({ url, commandTimeoutMs: 500, connectTimeoutMs: 200, onError: (e) => errors.push(e), onReady: () => undefined });
}

describe.each([
  ['memory', () => new MemoryCounterStore()],
  ['redis', () => redisStore()],
] as const)('%s counter store', (_kind, make) => {
  let store: CounterStore;
  beforeAll(async () => {
    store = make();
    if (store instanceof RedisCounterStore) expect(await store.waitReady(5_000)).toBe(true);
  });
  afterAll(() => store.close());

  it('counts hits in a window and reports the time left', async () => {
    const key = `${prefix}count:${_kind}`;
    const hits = [];
    for (let i = 0; i < 5; i++) hits.push(await store.hit(key, 60_000));
    expect(hits.map((h) => h.count)).toEqual([1, 2, 3, 4, 5]);
    for (const h of hits) {
      expect(h.resetMs).toBeGreaterThan(0);
      expect(h.resetMs).toBeLessThanOrEqual(60_000);
    }
  });

  it('keeps keys apart', async () => {
    const a = await store.hit(`${prefix}apart-a:${_kind}`, 60_000);
    const b = await store.hit(`${prefix}apart-b:${_kind}`, 60_000);
    expect([a.count, b.count]).toEqual([1, 1]);
  });

  it('opens a new window after the old one ends', async () => {
    const key = `${prefix}expire:${_kind}`;
    await store.hit(key, 150);
    await store.hit(key, 150);
    let next = await store.hit(key, 150);
    // The window is 150 ms: wait it out (bounded), then the count starts again at 1.
    for (let i = 0; i < 20 && next.count !== 1; i++) {
      await sleep(100);
      next = await store.hit(key, 150);
    }
    expect(next.count).toBe(1);
  });

  it('preloads a counter so the next hit continues from it', async () => {
    const key = `${prefix}preload:${_kind}`;
    await store.preload(key, 1999, 10_000);
    expect((await store.hit(key, 10_000)).count).toBe(2000);
    expect((await store.hit(key, 10_000)).count).toBe(2001);
  });
});

describe('redis counter store shared by replicas', () => {
  const replicas = [redisStore(), redisStore()];
  beforeAll(async () => {
    for (const r of replicas) expect(await r.waitReady(5_000)).toBe(true);
  });
  afterAll(async () => {
    for (const r of replicas) await r.close();
  });

  it('counts concurrent hits from two replicas exactly once each, with one window', async () => {
    const key = `${prefix}replicas`;
    const hits = await Promise.all(Array.from({ length: 400 }, (_, i) => replicas[i % 2].hit(key, 60_000)));
    expect(hits.map((h) => h.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 400 }, (_, i) => i + 1));
    const direct = new Redis(REDIS_URL);
    try {
      expect(await direct.get(key)).toBe('400');
      const ttl = await direct.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      direct.disconnect();
    }
  });
});

describe('redis counter store with Redis down', () => {
  it('fails each hit at once instead of queueing it, and reports the connection error', async () => {
    const port = await freePort(); // nothing listens there
    const errors: Error[] = [];
    const store = redisStore(`redis://127.0.0.1:${port}`, errors);
    try {
      expect(await store.waitReady(300)).toBe(false);
      await expect(store.hit(`${prefix}down`, 1000)).rejects.toThrow();
      expect(errors.length).toBeGreaterThan(0);
      expect(errors[0].message).toMatch(/ECONNREFUSED/);
    } finally {
      await store.close();
      // ioredis leaves the refused socket's connect timer running for connectTimeoutMs; let it end here.
      await sleep(250);
    }
  });
});
