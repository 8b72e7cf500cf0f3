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
  hit(key: string, windowMs: number): Promise<CounterHit>;
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

/** INCR and the window's expiry in one atomic step, so replicas never race on a new window. */
const HIT_SCRIPT = `
local c = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {c, ttl}
`;

type RedisWithHit = Redis & { rlHit(key: string, windowMs: number): Promise<[number, number]> };

export interface RedisCounterStoreOptions {
  url: string;
  /** A command not answered in this time fails (the limiter then fails open or closed). */
  commandTimeoutMs: number;
  connectTimeoutMs?: number;
  onError(err: Error): void;
  onReady(): void;
}

/** Counters shared by every gateway replica. */
export class RedisCounterStore implements CounterStore {
  readonly kind = 'redis';
  private readonly redis: RedisWithHit;

  constructor(opts: RedisCounterStoreOptions) {
    this.redis = new Redis(opts.url, {
      // Fail at once while disconnected instead of queueing: a request must not wait for Redis to return.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs,
      // Commands of one event-loop tick go out in one write: in the gateway that halved the socket-write
      // time per request (requests arrive spread out, so each would otherwise be its own syscall).
      enableAutoPipelining: true,
      connectTimeout: opts.connectTimeoutMs ?? 2_000,
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

  async hit(key: string, windowMs: number): Promise<CounterHit> {
    const [count, ttl] = await this.redis.rlHit(key, windowMs);
    return { count: Number(count), resetMs: Number(ttl) };
  }

  async preload(key: string, count: number, windowMs: number): Promise<void> {
    await this.redis.set(key, String(count), 'PX', windowMs);
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end') return;
    // Not connected: stop reconnecting at once (QUIT would be refused without the offline queue).
    if (this.redis.status !== 'ready') return this.redis.disconnect();
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
