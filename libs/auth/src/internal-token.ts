import { createHmac, timingSafeEqual } from 'node:crypto';
import { identitySchema, type Identity } from '@th/contracts';

export const IDENTITY_HEADER = 'x-th-identity';
const MAX_AGE_MS = 5 * 60_000;

/** Signs the caller's identity so services behind the gateway can trust it (HMAC-SHA256, short-lived). */
export function signIdentity(identity: Identity, key: string, now = Date.now()): string {
  const payload = Buffer.from(JSON.stringify({ ...identity, iat: now })).toString('base64url');
  const mac = createHmac('sha256', key).update(payload).digest('base64url');
  return `${payload}.${mac}`;
}

/** Returns the identity when the token's signature and age check out, otherwise null. */
export function verifyIdentity(token: string, key: string, now = Date.now()): Identity | null {
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
  if (typeof iat !== 'number' || Math.abs(now - iat) > MAX_AGE_MS) return null;
  const parsed = identitySchema.safeParse(decoded);
  return parsed.success ? parsed.data : null;
}
