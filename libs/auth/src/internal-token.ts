import { createHmac, timingSafeEqual } from 'node:crypto';
import { identitySchema, type Identity } from '@th/contracts';

export const IDENTITY_HEADER = 'x-th-identity';
/** A signed identity is accepted for this long after it was signed (and as far before, for clock skew). */
export const IDENTITY_TOKEN_MAX_AGE_MS = 5 * 60_000;
const MAX_AGE_MS = IDENTITY_TOKEN_MAX_AGE_MS;

/** Signs the caller's identity so services behind the gateway can trust it (HMAC-SHA256, short-lived). */
export function signIdentity(identity: Identity, key: string, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ ...identity, iat: now })).toString('base64url');
  const mac = createHmac('sha256', key).update(payload).digest('base64url');
  return `${payload}.${mac}`;
}

/** Returns the identity when the token's signature and age check out, otherwise null. */
export function verifyIdentity(token: string, key: string, now = Date.now()): Identity | null {
  const v = verifyWithIat(token, key);
  return v && Math.abs(now - v.iat) <= MAX_AGE_MS ? v.identity : null;
}

function verifyWithIat(token: string, key: string): { identity: Identity; iat: number } | null {
  const dot = token.indexOf('.');
  if (dot <= 0) return null;
  const payload = token.slice(0, dot);
  const mac = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = createHmac('sha256', key).update(payload).digest();
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) return null;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const iat = (decoded as { iat?: unknown }).iat;
  if (typeof iat !== 'number') return null;
  const parsed = identitySchema.safeParse(decoded);
  return parsed.success ? { identity: parsed.data, iat } : null;
}

/**
 * The gateway side: one signed header per resolved identity object, re-signed after `reuseMs` (well
 * inside the 5-minute token age). Keyed weakly by the identity object, so an entry lives no longer than
 * the resolver's cached identity it belongs to; a fresh identity (a cache miss, a changed key) is signed
 * anew at once.
 */
export class IdentitySigner {
  private readonly tokens = new WeakMap<Identity, { token: string; at: number }>();

  constructor(
    private readonly key: string,
    private readonly reuseMs = 30_000,
  ) {
    if (reuseMs < 0 || reuseMs > MAX_AGE_MS / 5) throw new Error(`reuseMs must lie within 0..${MAX_AGE_MS / 5}`);
  }

  sign(identity: Identity, now = Date.now()): string {
    const hit = this.tokens.get(identity);
    if (hit && now - hit.at < this.reuseMs && now >= hit.at) return hit.token;
    const token = signIdentity(identity, this.key, now);
    this.tokens.set(identity, { token, at: now });
    return token;
  }
}

/**
 * The service side: verifies signed identity headers, remembering the verified tokens in a bounded LRU
 * keyed by the whole token (payload and MAC) so the HMAC, the JSON parse and the schema check run once
 * per token. The age is checked on every call, so a cached token expires exactly as an uncached one.
 * Only valid tokens are cached; a bad one is checked in full each time.
 */
export class IdentityVerifier {
  private readonly cache = new Map<string, { identity: Identity; iat: number }>();

  constructor(
    private readonly key: string,
    private readonly maxEntries = 1024,
  ) {}

  verify(token: string, now = Date.now()): Identity | null {
    let v = this.cache.get(token);
    if (v) {
      // LRU: move to the back.
      this.cache.delete(token);
      this.cache.set(token, v);
    } else {
      v = verifyWithIat(token, this.key) ?? undefined;
      if (!v) return null;
      if (this.cache.size >= this.maxEntries) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(token, v);
    }
    if (Math.abs(now - v.iat) > MAX_AGE_MS) {
      this.cache.delete(token);
      return null;
    }
    return v.identity;
  }

  get size(): number {
    return this.cache.size;
  }
}
