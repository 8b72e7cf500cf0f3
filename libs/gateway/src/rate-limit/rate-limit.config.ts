import { z } from 'zod';
import { bool, secret } from '@th/config';
import { RATE_LIMIT_RULES, type Quota } from './rate-limit.rules';

const RULE_IDS = new Set(RATE_LIMIT_RULES.map((r) => r.id));

/**
 * `rule-id=count/seconds,...`: an operator's own value for some rows of the table (a self-hosted
 * installation sized differently from the spec's production service).
 */
const overrides = z
  .string()
  .default('')
  .transform((raw, ctx) => {
    const out: Record<string, Quota> = {};
    for (const part of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
      const m = /^([a-z0-9-]+)=(\d+)\/(\d+)$/.exec(part);
      if (!m) {
        ctx.addIssue({ code: 'custom', message: `"${part}" is not rule-id=count/seconds` });
        continue;
      }
      const [, id, limit, seconds] = m;
      if (!RULE_IDS.has(id)) ctx.addIssue({ code: 'custom', message: `unknown rate-limit rule "${id}"` });
      else if (Number(limit) < 1 || Number(seconds) < 1) ctx.addIssue({ code: 'custom', message: `"${part}": count and seconds must be at least 1` });
      else out[id] = { limit: Number(limit), windowSeconds: Number(seconds) };
    }
    return out;
  });

/** Settings of the rate limiter in both forms. */
export const rateLimitConfigShape = {
  RATE_LIMIT_ENABLED: bool(true),
  /** Which column of the spec's table applies. */
  RATE_LIMIT_REGION: z.enum(['us', 'eu']).default('us'),
  /** Proxies in front of the gateway that append to X-Forwarded-For; 0 counts by the socket's address. */
  RATE_LIMIT_TRUSTED_PROXIES: z.coerce.number().int().min(0).max(10).default(0),
  RATE_LIMIT_OVERRIDES: overrides,
};

/** Settings of the shared counters of the cluster gateway. */
export const redisRateLimitConfigShape = {
  /** Required while RATE_LIMIT_ENABLED is true. */
  REDIS_URL: secret(z.string().url().optional()),
  /** What a request gets while Redis cannot answer: `open` lets it through, `closed` answers 503. */
  RATE_LIMIT_FAIL_MODE: z.enum(['open', 'closed']).default('open'),
  RATE_LIMIT_KEY_PREFIX: z.string().min(1).default('th:rl:'),
  RATE_LIMIT_REDIS_TIMEOUT_MS: z.coerce.number().int().min(1).max(10_000).default(250),
  /**
   * The most requests of one window a replica reserves from Redis at once and then counts locally (a
   * lease; also at most 1/100 of the row's limit, so rows under 200 are always counted exactly, and
   * shrinking toward the limit, where every request is counted in Redis). 1 counts every request in Redis.
   */
  RATE_LIMIT_LEASE_MAX: z.coerce.number().int().min(1).max(1000).default(100),
};

export const rateLimitConfigSchema = z.object(rateLimitConfigShape);
export const redisRateLimitConfigSchema = z.object({ ...rateLimitConfigShape, ...redisRateLimitConfigShape });
export type RateLimitConfig = z.infer<typeof rateLimitConfigSchema>;
export type RedisRateLimitConfig = z.infer<typeof redisRateLimitConfigSchema>;
