import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { freePort } from '@th/platform';
import { MemoryCounterStore, RedisCounterStore, type CounterStore } from './counter-store';

const REDIS_URL = 'redis://127.0.0.1:6379';
const prefix = `th:test:rl:${randomBytes(6).toString('hex')}:`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function redisStore(url = REDIS_URL, errors: Error[] = [], leaseMax?: number): RedisCounterStore {
  return new RedisCounterStore({ url, commandTimeoutMs: 500, connectTimeoutMs: 200, onError: (e) => errors.push(e), onReady: () => undefined, leaseMax });
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

describe('redis counter store with leases (two replicas)', () => {
  const LEASE = 10;
  const replicas = [redisStore(REDIS_URL, [], LEASE), redisStore(REDIS_URL, [], LEASE)];
  const direct = new Redis(REDIS_URL);
  beforeAll(async () => {
    for (const r of replicas) expect(await r.waitReady(5_000)).toBe(true);
  });
  afterAll(async () => {
    for (const r of replicas) await r.close();
    direct.disconnect();
  });

  it('gives every concurrent hit its own slot of the shared count and reserves whole blocks in Redis', async () => {
    const key = `${prefix}lease-concurrent`;
    const hits = await Promise.all(Array.from({ length: 400 }, (_, i) => replicas[i % 2].hit(key, 60_000, 100_000)));
    const counts = hits.map((h) => h.count);
    expect(new Set(counts).size).toBe(400);
    for (const h of hits) {
      expect(h.resetMs).toBeGreaterThan(0);
      expect(h.resetMs).toBeLessThanOrEqual(60_000);
    }
    const stored = Number(await direct.get(key));
    // Every slot handed out is reserved in Redis; what is left over is at most one partly used block per replica.
    expect(Math.max(...counts)).toBeLessThanOrEqual(stored);
    expect(stored).toBeGreaterThanOrEqual(400);
    expect(stored).toBeLessThanOrEqual(400 + 2 * (LEASE - 1));
    const ttl = await direct.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('never lets more than the limit through across replicas, and counts the last blocks exactly', async () => {
    const key = `${prefix}lease-limit`;
    const limit = 1000; // a block is at most 1/100 of the limit: 10
    const hits = [];
    for (let i = 0; i < 1100; i++) hits.push(await replicas[i % 2].hit(key, 60_000, limit));
    const allowed = hits.filter((h) => h.count <= limit).map((h) => h.count);
    expect(new Set(allowed).size).toBe(allowed.length);
    expect(allowed.length).toBeLessThanOrEqual(limit);
    // What leases strand is at most one partly used block per replica.
    expect(allowed.length).toBeGreaterThanOrEqual(limit - 2 * (LEASE - 1));
    // Past the limit each request is counted on its own, in order: the stored count is every slot handed out.
    const over = hits.filter((h) => h.count > limit).map((h) => h.count);
    expect(over).toEqual(Array.from({ length: over.length }, (_, i) => limit + 1 + i));
    expect(Number(await direct.get(key))).toBe(hits[hits.length - 1].count);
  });

  it('counts each request on its own near the limit (a preloaded counter continues exactly)', async () => {
    const key = `${prefix}lease-preload`;
    await replicas[0].preload(key, 1997, 10_000);
    const counts = [];
    for (let i = 0; i < 4; i++) counts.push((await replicas[i % 2].hit(key, 10_000, 2000)).count);
    expect(counts).toEqual([1998, 1999, 2000, 2001]);
    expect(await direct.get(key)).toBe('2001');
  });

  it('counts small limits exactly (no lease under 2 x 100 requests)', async () => {
    const key = `${prefix}lease-small`;
    const counts = [];
    for (let i = 0; i < 6; i++) counts.push((await replicas[i % 2].hit(key, 60_000, 150)).count);
    expect(counts).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await direct.get(key)).toBe('6');
  });

  it('hands out a lease slot at once (hitNow) and nothing without a lease', async () => {
    const key = `${prefix}lease-now`;
    expect(replicas[0].hitNow(key)).toBeUndefined();
    expect((await replicas[0].hit(key, 60_000, 100_000)).count).toBe(1);
    const now = replicas[0].hitNow(key);
    expect(now?.count).toBe(2);
    expect(now?.resetMs).toBeGreaterThan(0);
    expect(now?.resetMs).toBeLessThanOrEqual(60_000);
    // The other replica holds no lease for the key: it must ask Redis, and gets the next block.
    expect(replicas[1].hitNow(key)).toBeUndefined();
    expect((await replicas[1].hit(key, 60_000, 100_000)).count).toBe(LEASE + 1);
    expect(await direct.get(key)).toBe(String(2 * LEASE));
  });

  it('drops a lease when its window ends: the new window starts at 1', async () => {
    const key = `${prefix}lease-expire`;
    expect((await replicas[0].hit(key, 150, 100_000)).count).toBe(1);
    expect((await replicas[0].hit(key, 150, 100_000)).count).toBe(2);
    let next = await replicas[0].hit(key, 150, 100_000);
    for (let i = 0; i < 20 && next.count !== 1; i++) {
      await sleep(100);
      next = await replicas[0].hit(key, 150, 100_000);
    }
    expect(next.count).toBe(1);
  });
});

describe('redis counter store with Redis down', () => {
  it('fails each hit at once instead of queueing it, and reports the connection error', async () => {
    const port = await freePort(); // nothing listens there
    const errors: Error[] = [];
    const store = redisStore(`redis://127.0.0.1:${port}`, errors, 10);
    try {
      expect(await store.waitReady(300)).toBe(false);
      await expect(store.hit(`${prefix}down`, 1000)).rejects.toThrow();
      await expect(store.hit(`${prefix}down`, 1000, 100_000)).rejects.toThrow();
      // Requests waiting on the same reservation fail with it (none waits for a second one).
      const waiting = await Promise.allSettled(Array.from({ length: 5 }, () => store.hit(`${prefix}down`, 1000, 100_000)));
      expect(waiting.map((r) => r.status)).toEqual(Array(5).fill('rejected'));
      expect(errors.length).toBeGreaterThan(0);
      expect(errors[0].message).toMatch(/ECONNREFUSED/);
    } finally {
      await store.close();
    }
  });
});
