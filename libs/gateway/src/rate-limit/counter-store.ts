import { Redis } from 'ioredis';

/** One counted request: the window's count including this request, and the time left in the window. */
export interface CounterHit {
  count: number;
  resetMs: number;
}

/**
 * Fixed-window counters: a window opens at a key's first request and lasts the rule's interval; the
 * count is kept for the whole window (requests over the limit count too).
 */
export interface CounterStore {
  readonly kind: 'memory' | 'redis';
  /**
   * Counts one request. `limit`, when given, is the window's limit: a store shared by replicas may then
   * reserve a block of the window's budget at once (see RedisCounterStore); without it every hit is
   * counted in the store on its own.
   */
  hit(key: string, windowMs: number, limit?: number): Promise<CounterHit>;
  /**
   * Counts one request at once, without waiting, when the store can (this process holds the count or a
   * slot of a lease for the key); undefined otherwise, and nothing was counted: call hit.
   */
  hitNow?(key: string, windowMs: number, limit?: number): CounterHit | undefined;
  /** Sets a counter and opens its window now. Tests use it to start a counter near a large limit. */
  preload(key: string, count: number, windowMs: number): Promise<void>;
  close(): Promise<void>;
}

/** Counters in this process: the standalone form (one process, nothing to share). */
export class MemoryCounterStore implements CounterStore {
  readonly kind = 'memory';
  private readonly counters = new Map<string, { count: number; resetAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly maxKeys = 200_000) {
    this.sweeper = setInterval(() => this.sweep(), 30_000);
    this.sweeper.unref();
  }

  async hit(key: string, windowMs: number): Promise<CounterHit> {
    return this.hitNow(key, windowMs);
  }

  hitNow(key: string, windowMs: number): CounterHit {
    const now = Date.now();
    let entry = this.counters.get(key);
    if (!entry || entry.resetAt <= now) {
      if (!entry && this.counters.size >= this.maxKeys) this.evict(now);
      entry = { count: 0, resetAt: now + windowMs };
      this.counters.set(key, entry);
    }
    entry.count += 1;
    return { count: entry.count, resetMs: entry.resetAt - now };
  }

  async preload(key: string, count: number, windowMs: number): Promise<void> {
    this.counters.set(key, { count, resetAt: Date.now() + windowMs });
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.counters.clear();
  }

  private sweep(now = Date.now()): void {
    for (const [key, entry] of this.counters) if (entry.resetAt <= now) this.counters.delete(key);
  }

  /** Memory stays bounded: expired windows go first, then the oldest keys (Map keeps insertion order). */
  private evict(now: number): void {
    this.sweep(now);
    for (const key of this.counters.keys()) {
      if (this.counters.size < this.maxKeys) break;
      this.counters.delete(key);
    }
  }
}

/**
 * INCRBY and the window's expiry in one atomic step, so replicas never race on a new window.
 * ARGV: window ms, the window's limit, the block asked for. A block (more than one request's worth,
 * a lease) is cut so that at least as much again stays below the limit: it halves toward the limit,
 * and within 3 of it (or past it) each request is counted alone. Returns the count after the
 * increment (the block's last slot), the window's time left, and the block granted.
 */
const HIT_SCRIPT = `
local n = tonumber(ARGV[3])
if n > 1 then
  local c0 = tonumber(redis.call('GET', KEYS[1]) or '0')
  n = math.max(1, math.min(n, math.floor((tonumber(ARGV[2]) - c0) / 2)))
end
local c = redis.call('INCRBY', KEYS[1], n)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {c, ttl, n}
`;

type RedisWithHit = Redis & { rlHit(key: string, windowMs: number, limit: number, block: number): Promise<[number, number, number]> };

/**
 * A block of one window's budget this replica reserved in Redis and spends locally: slots `next`..`last`
 * of the shared count, valid until `resetAt` (this process's clock, never later than the window's end in
 * Redis). `exactUntil`: the last grant was a single request (the window is near its limit), so until the
 * window ends every request is counted in Redis on its own, concurrently, as without leasing.
 */
interface Lease {
  next: number;
  last: number;
  resetAt: number;
  exactUntil: number;
  /** The reservation in flight, and how many requests wait for it. */
  refill: Promise<unknown> | null;
  waiting: number;
}

/** Leases reserve at most this share of a limit (1/100): limits under 200 are always counted exactly. */
const LEASE_SHARE = 100;
const MAX_LEASES = 100_000;
/** A request that found no slot after this many reservations is counted in Redis on its own. */
const MAX_PASSES = 16;

export interface RedisCounterStoreOptions {
  url: string;
  /** A command not answered in this time fails (the limiter then fails open or closed). */
  commandTimeoutMs: number;
  connectTimeoutMs?: number;
  onError(err: Error): void;
  onReady(): void;
  /**
   * The largest block of a window's budget one replica reserves at once (a lease); a block is also at
   * most 1/100 of the limit. 1 (the default) counts every request in Redis on its own.
   */
  leaseMax?: number;
}

/** Counters shared by every gateway replica. */
export class RedisCounterStore implements CounterStore {
  readonly kind = 'redis';
  private readonly redis: RedisWithHit;
  private readonly leaseMax: number;
  private readonly leases = new Map<string, Lease>();
  private readonly leaseSweeper: NodeJS.Timeout;

  constructor(opts: RedisCounterStoreOptions) {
    this.leaseMax = Math.max(1, Math.floor(opts.leaseMax ?? 1));
    this.leaseSweeper = setInterval(() => this.sweepLeases(Date.now()), 30_000);
    this.leaseSweeper.unref();
    this.redis = new Redis(opts.url, {
      // Fail at once while disconnected instead of queueing: a request must not wait for Redis to return.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs,
      // Commands of one event-loop tick go out in one write: in the gateway that halved the socket-write
      // time per request (requests arrive spread out, so each would otherwise be its own syscall).
      enableAutoPipelining: true,
      connectTimeout: opts.connectTimeoutMs ?? 2_000,
      // disconnect() ends the client's last socket and arms a timer (disconnectTimeout, 2 s by default) that
      // destroys it unless its 'close' comes first. While Redis is unreachable (status 'reconnecting') that
      // socket has already closed, so nothing clears the timer: close() would leave it keeping the process
      // alive for 2 s. The store has nothing to drain when it disconnects (no offline queue; a ready client
      // closes with QUIT), so the socket is destroyed at once.
      disconnectTimeout: 0,
      retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2_000),
    }) as RedisWithHit;
    this.redis.defineCommand('rlHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
    this.redis.on('error', (err: Error) => opts.onError(err));
    this.redis.on('ready', () => opts.onReady());
  }

  /** Resolves when connected, or after timeoutMs (the limiter's fail mode covers a Redis that is down). */
  async waitReady(timeoutMs: number): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.redis.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.redis.once('ready', onReady);
    });
  }

  /** A slot of this replica's lease for the key, when it holds one. */
  hitNow(key: string): CounterHit | undefined {
    const lease = this.leases.get(key);
    if (lease === undefined || lease.next > lease.last) return undefined;
    const now = Date.now();
    if (now >= lease.resetAt) return undefined;
    const count = lease.next++;
    return { count, resetMs: lease.resetAt - now };
  }

  /**
   * Counts one request. With a limit and leasing on, the request takes the next slot of this replica's
   * lease when it has one; otherwise it reserves a new block in Redis (one reservation per key at a time,
   * the requests that arrive meanwhile wait for it). The shared count in Redis thus includes every slot
   * any replica reserved: no replica ever lets more than the limit through; blocks shrink toward the
   * limit, and within 3 of it (and past it) every request is counted on its own, exactly as without
   * leasing. Slots a replica reserved but did not use by the window's end are lost (about one block per
   * replica and key, at most 1/100 of the limit each).
   */
  async hit(key: string, windowMs: number, limit?: number): Promise<CounterHit> {
    const block = limit === undefined ? 1 : Math.min(this.leaseMax, Math.floor(limit / LEASE_SHARE));
    if (block <= 1 || limit === undefined) return this.remote(key, windowMs, 1, 1);
    // Bounded: each pass takes a slot, starts a reservation, or waits for one (which grants at least one slot).
    for (let pass = 0; pass < MAX_PASSES; pass++) {
      const slot = this.hitNow(key);
      if (slot !== undefined) return slot;
      const now = Date.now();
      let lease = this.leases.get(key);
      if (lease === undefined) {
        if (this.leases.size >= MAX_LEASES) this.sweepLeases(now);
        lease = { next: 1, last: 0, resetAt: 0, exactUntil: 0, refill: null, waiting: 0 };
        this.leases.set(key, lease);
      } else {
        if (now < lease.exactUntil) break;
        if (lease.refill !== null) {
          // A reservation that fails fails its waiters too (the limiter's fail mode answers them), so no
          // request waits for Redis longer than one command would have.
          lease.waiting += 1;
          try {
            await lease.refill;
          } finally {
            lease.waiting -= 1;
          }
          continue;
        }
      }
      return this.refill(lease, key, windowMs, limit, block, now);
    }
    return this.remote(key, windowMs, 1, 1);
  }

  /**
   * Reserves a block in Redis for this request and the ones waiting on the lease: the block plus one slot
   * per waiting request (each takes its slot as soon as the reservation is back).
   */
  private refill(lease: Lease, key: string, windowMs: number, limit: number, block: number, sentAt: number): Promise<CounterHit> {
    const refill = this.remote(key, windowMs, limit, block + lease.waiting).then(
      (hit) => {
        lease.refill = null;
        // The window ends no earlier than sentAt + its time left as Redis reported it.
        lease.resetAt = sentAt + hit.resetMs;
        lease.next = hit.count - hit.granted + 2; // this request takes the block's first slot
        lease.last = hit.count;
        lease.exactUntil = hit.granted === 1 ? lease.resetAt : 0;
        return { count: hit.count - hit.granted + 1, resetMs: hit.resetMs };
      },
      (err: unknown) => {
        lease.refill = null;
        throw err;
      },
    );
    lease.refill = refill;
    return refill;
  }

  private async remote(key: string, windowMs: number, limit: number, block: number): Promise<CounterHit & { granted: number }> {
    const [count, ttl, granted] = await this.redis.rlHit(key, windowMs, limit, block);
    return { count: Number(count), resetMs: Number(ttl), granted: Number(granted) };
  }

  /** Drops the leases whose window has ended, then (still too many) the oldest. */
  private sweepLeases(now: number): void {
    for (const [key, lease] of this.leases) if (lease.resetAt <= now && lease.refill === null) this.leases.delete(key);
    for (const [key, lease] of this.leases) {
      if (this.leases.size < MAX_LEASES) break;
      if (lease.refill === null) this.leases.delete(key);
    }
  }

  async preload(key: string, count: number, windowMs: number): Promise<void> {
    this.leases.delete(key);
    await this.redis.set(key, String(count), 'PX', windowMs);
  }

  async close(): Promise<void> {
    clearInterval(this.leaseSweeper);
    this.leases.clear();
    if (this.redis.status === 'end') return;
    // Not connected: stop reconnecting at once (QUIT would be refused without the offline queue).
    if (this.redis.status !== 'ready') return this.redis.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
