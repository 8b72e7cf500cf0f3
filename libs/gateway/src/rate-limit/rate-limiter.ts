import type { IncomingHttpHeaders } from 'node:http';
import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ConfigError } from '@th/config';
import { METRICS } from '@th/platform';
import { MemoryCounterStore, RedisCounterStore, type CounterHit, type CounterStore } from './counter-store';
import type { RateLimitConfig, RedisRateLimitConfig } from './rate-limit.config';
import { quotaOf, selectRule, type Quota, type RateLimitRule, type Region } from './rate-limit.rules';

export type FailMode = 'open' | 'closed';

/**
 * Whom a request is counted as: a verified API key, personal access token or service key (its id,
 * whichever header carried it), a user of a verified session (its user id), or null: no valid
 * credential, counted by IP alone. Headers a client merely asserts (x-user-id) never pick a bucket.
 */
export type RateLimitPrincipal = { kind: 'api-key'; id: string } | { kind: 'user'; id: string } | null;

/** Verifies a request's credential for the limiter; answers at once from its cache when it can. Never rejects. */
export interface PrincipalResolver {
  rateLimitPrincipal(headers: IncomingHttpHeaders): RateLimitPrincipal | Promise<RateLimitPrincipal>;
}

export interface RateLimiterOptions {
  store: CounterStore;
  /** Authenticates before counting, so the bucket is the verified identity's. */
  principals: PrincipalResolver;
  region: Region;
  /** What a request gets while the store cannot answer. */
  failMode: FailMode;
  trustedProxies: number;
  keyPrefix: string;
  overrides?: Record<string, Quota>;
  logger?: Pick<Logger, 'error' | 'warn' | 'log'>;
}

/** What the limiter decided for one request. */
export type RateLimitDecision =
  | { kind: 'allowed' | 'limited'; rule: RateLimitRule; quota: Quota; remaining: number; resetSeconds: number }
  /** The counter store failed; `failMode` says what the request gets. */
  | { kind: 'store-down'; rule: RateLimitRule; failMode: FailMode; error: Error };

/** The parts of a request the limiter reads. */
export interface RateLimitRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  remoteAddress: string | undefined;
}

/** Paths outside the public API: probes of the orchestrator must never be throttled. */
const EXEMPT = new Set(['/health/live', '/health/ready']);
const ERROR_LOG_INTERVAL_MS = 10_000;

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  const s = Array.isArray(v) ? v[0] : v;
  return s === undefined || s === '' ? undefined : s;
}

function normalizeIp(ip: string): string {
  const s = ip.trim();
  return s.startsWith('::ffff:') && s.includes('.') ? s.slice(7) : s;
}

/**
 * The gateway's rate limiter: picks the spec's row for a request, counts it under the row's identity
 * key in the store (Redis shared by replicas, or this process), and answers 429 over the limit.
 */
export class RateLimiter {
  private readonly logger: Pick<Logger, 'error' | 'warn' | 'log'>;
  private failures = 0;
  private lastErrorLog = 0;
  /** An error was logged and no recovery since. */
  private reportedDown = false;

  constructor(private readonly opts: RateLimiterOptions) {
    this.logger = opts.logger ?? new Logger('RateLimiter');
  }

  get store(): CounterStore {
    return this.opts.store;
  }

  quota(rule: RateLimitRule): Quota {
    return this.opts.overrides?.[rule.id] ?? quotaOf(rule, this.opts.region);
  }

  /** The client address: the socket's peer, or the entry `trustedProxies` hops back in X-Forwarded-For. */
  clientIp(req: Pick<RateLimitRequest, 'headers' | 'remoteAddress'>): string {
    const socket = normalizeIp(req.remoteAddress ?? 'unknown');
    if (this.opts.trustedProxies === 0) return socket;
    const xff = header(req.headers, 'x-forwarded-for');
    if (!xff) return socket;
    const hops = xff.split(',').map((s) => s.trim()).filter(Boolean);
    if (hops.length === 0) return socket;
    return normalizeIp(hops[Math.max(0, hops.length - this.opts.trustedProxies)]);
  }

  /** The counter key of a request under a rule: a credential's id (never its value), a user id with the IP, or the IP. */
  counterKey(rule: RateLimitRule, req: Pick<RateLimitRequest, 'headers' | 'remoteAddress'>, principal: RateLimitPrincipal): string {
    let who: string;
    if (rule.identity === 'api-key' && principal?.kind === 'api-key') who = principal.id;
    else if (rule.identity === 'user-ip' && principal?.kind === 'user') who = `${encodeURIComponent(principal.id)}@${this.clientIp(req)}`;
    // selectRule picks a key or user row only for such a principal: anything else counts by IP.
    else who = this.clientIp(req);
    return `${this.opts.keyPrefix}${rule.id}:${who}`;
  }

  /** The verified principal of a request's headers (the resolver's cache answers at once). */
  principal(headers: IncomingHttpHeaders): RateLimitPrincipal | Promise<RateLimitPrincipal> {
    return this.opts.principals.rateLimitPrincipal(headers);
  }

  ruleFor(req: Pick<RateLimitRequest, 'method' | 'path'>, principal: RateLimitPrincipal): RateLimitRule {
    return selectRule({ method: req.method, path: req.path, hasApiKey: principal?.kind === 'api-key', hasUserId: principal?.kind === 'user' });
  }

  async check(req: RateLimitRequest): Promise<RateLimitDecision> {
    return this.decide(req);
  }

  /**
   * check, answered at once when the store can count the request without waiting (a slot of a lease
   * this replica holds, or the in-process counters): the gateway's hot path skips a promise per request.
   */
  decide(req: RateLimitRequest): RateLimitDecision | Promise<RateLimitDecision> {
    const principal = this.principal(req.headers);
    if (principal instanceof Promise) return principal.then((p) => this.count(req, p));
    return this.count(req, principal);
  }

  private count(req: RateLimitRequest, principal: RateLimitPrincipal): RateLimitDecision | Promise<RateLimitDecision> {
    const rule = this.ruleFor(req, principal);
    const quota = this.quota(rule);
    const key = this.counterKey(rule, req, principal);
    const windowMs = quota.windowSeconds * 1000;
    const now = this.opts.store.hitNow?.(key, windowMs, quota.limit);
    if (now !== undefined) return this.decision(rule, quota, now);
    return this.opts.store.hit(key, windowMs, quota.limit).then(
      (hit) => {
        this.recovered();
        return this.decision(rule, quota, hit);
      },
      (err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        this.storeFailed(error);
        return { kind: 'store-down', rule, failMode: this.opts.failMode, error };
      },
    );
  }

  private decision(rule: RateLimitRule, quota: Quota, hit: CounterHit): RateLimitDecision {
    return {
      kind: hit.count > quota.limit ? 'limited' : 'allowed',
      rule,
      quota,
      remaining: Math.max(0, quota.limit - hit.count),
      resetSeconds: Math.max(1, Math.ceil(hit.resetMs / 1000)),
    };
  }

  /** Express middleware; it runs before the proxy and the body parser, so a refused body is never read. */
  middleware(): (req: Request, res: Response, next: NextFunction) => void {
    return (req, res, next) => {
      if (EXEMPT.has(req.path)) return next();
      this.check({ method: req.method, path: req.path, headers: req.headers, remoteAddress: req.socket.remoteAddress }).then(
        (d) => {
          METRICS.rateLimitDecisions.inc({ rule: d.rule.id, decision: d.kind });
          if (d.kind === 'store-down') {
            if (d.failMode === 'open') return next();
            res.setHeader('Retry-After', '1');
            res.status(503).json({ detail: 'Rate limiting is unavailable; retry shortly' });
            req.resume();
            return;
          }
          // IETF draft-ietf-httpapi-ratelimit-headers (draft 06 form): one header per field.
          res.setHeader('RateLimit-Limit', String(d.quota.limit));
          res.setHeader('RateLimit-Remaining', String(d.remaining));
          res.setHeader('RateLimit-Reset', String(d.resetSeconds));
          res.setHeader('RateLimit-Policy', `${d.quota.limit};w=${d.quota.windowSeconds}`);
          if (d.kind === 'allowed') return next();
          res.setHeader('Retry-After', String(d.resetSeconds));
          res.status(429).json({
            detail: `Rate limit exceeded: ${d.quota.limit} requests per ${d.quota.windowSeconds} s for ${d.rule.match} (${d.rule.category}); retry after ${d.resetSeconds} s`,
          });
          req.resume();
        },
        (err: unknown) => next(err),
      );
    };
  }

  close(): Promise<void> {
    return this.opts.store.close();
  }

  /**
   * Logs the first failure at once, then at most one line per interval with the failures since; a
   * recovery is logged once after a logged failure, so a flapping store cannot flood the log.
   */
  private storeFailed(err: Error): void {
    this.failures += 1;
    const now = Date.now();
    if (now - this.lastErrorLog < ERROR_LOG_INTERVAL_MS) return;
    this.lastErrorLog = now;
    this.reportedDown = true;
    this.logger.error(
      { msg: `rate-limit counter store (${this.opts.store.kind}) failed: ${err.message}; failing ${this.opts.failMode}`, failures: this.failures, failMode: this.opts.failMode },
      'RateLimiter',
    );
    this.failures = 0;
  }

  private recovered(): void {
    if (!this.reportedDown) return;
    this.reportedDown = false;
    this.logger.warn({ msg: `rate-limit counter store (${this.opts.store.kind}) answers again`, failuresSinceLastLog: this.failures }, 'RateLimiter');
  }
}

/** A limiter that lets everything through (RATE_LIMIT_ENABLED=false). */
export interface RateLimitHandle {
  limiter: RateLimiter | null;
  middleware: (req: Request, res: Response, next: NextFunction) => void;
  close(): Promise<void>;
}

function handle(limiter: RateLimiter | null): RateLimitHandle {
  return {
    limiter,
    middleware: limiter ? limiter.middleware() : (_req, _res, next) => next(),
    close: () => limiter?.close() ?? Promise.resolve(),
  };
}

/** The standalone form: counters in this process. */
export function createMemoryRateLimiter(config: RateLimitConfig, principals: PrincipalResolver): RateLimitHandle {
  if (!config.RATE_LIMIT_ENABLED) return handle(null);
  return handle(
    new RateLimiter({
      store: new MemoryCounterStore(),
      principals,
      region: config.RATE_LIMIT_REGION,
      failMode: 'open',
      trustedProxies: config.RATE_LIMIT_TRUSTED_PROXIES,
      keyPrefix: '',
      overrides: config.RATE_LIMIT_OVERRIDES,
    }),
  );
}

/** The cluster gateway: counters in Redis, shared by every replica. Waits briefly for Redis, never fails on it. */
export async function createRedisRateLimiter(
  config: RedisRateLimitConfig,
  principals: PrincipalResolver,
  logger: Pick<Logger, 'error' | 'warn' | 'log'> = new Logger('RateLimiter'),
): Promise<RateLimitHandle> {
  if (!config.RATE_LIMIT_ENABLED) return handle(null);
  if (!config.REDIS_URL) throw new ConfigError(['REDIS_URL: required while RATE_LIMIT_ENABLED is true (gateway replicas share their counters in Redis)']);
  let lastConnError = '';
  const store = new RedisCounterStore({
    url: config.REDIS_URL,
    commandTimeoutMs: config.RATE_LIMIT_REDIS_TIMEOUT_MS,
    leaseMax: config.RATE_LIMIT_LEASE_MAX,
    // Connection errors repeat on every reconnect attempt: log each distinct one once.
    onError: (err) => {
      if (err.message === lastConnError) return;
      lastConnError = err.message;
      logger.error({ msg: `rate-limit Redis connection: ${err.message}; requests fail ${config.RATE_LIMIT_FAIL_MODE}` }, 'RateLimiter');
    },
    onReady: () => {
      if (lastConnError) logger.log({ msg: 'rate-limit Redis connection ready' }, 'RateLimiter');
      lastConnError = '';
    },
  });
  await store.waitReady(2_000);
  return handle(
    new RateLimiter({
      store,
      principals,
      region: config.RATE_LIMIT_REGION,
      failMode: config.RATE_LIMIT_FAIL_MODE,
      trustedProxies: config.RATE_LIMIT_TRUSTED_PROXIES,
      keyPrefix: config.RATE_LIMIT_KEY_PREFIX,
      overrides: config.RATE_LIMIT_OVERRIDES,
      logger,
    }),
  );
}
