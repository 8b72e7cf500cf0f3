import { createRequire } from 'node:module';

// jose is ESM-only; Node 20.19+ requires ES modules natively. A Node require (not the test runner's
// module system, which cannot load ES modules without flags) serves this CommonJS build and jest alike.
type Jose = typeof import('jose', { with: { 'resolution-mode': 'import' } });
let jose: Jose | undefined;
const loadJose = async (): Promise<Jose> => (jose ??= createRequire(__filename)('jose') as Jose);

export interface SessionClaims {
  user_id: string;
  organization_id: string;
  /**
   * A session made from an API key (the web app's sign-in): it acts as that credential, checked again
   * on every request (a revoked or expired key ends it). `user_id` is then the key's id.
   */
  credential_id?: string;
  /** The workspace the session acts in when the request names none (X-Tenant-Id). */
  tenant_id?: string;
}

/** The web app's session cookie: the session token, httpOnly, so the page's scripts never see it. */
export const SESSION_COOKIE = 'th_session';
/**
 * Writes authenticated by the session cookie must carry this header: a cross-site form cannot set it, and
 * a cross-site script cannot without a CORS preflight the service never grants.
 */
export const CSRF_HEADER = 'x-requested-with';

const ISSUER = 'tracehouse';
const AUDIENCE = 'tracehouse-api';

/** A user session as a bearer token: an HS256 JWT (jose) carrying the user and organization. */
export async function signSessionToken(claims: SessionClaims, secret: string, ttlSeconds: number): Promise<string> {
  const { SignJWT } = await loadJose();
  return new SignJWT({
    org: claims.organization_id,
    ...(claims.credential_id ? { cid: claims.credential_id } : {}),
    ...(claims.tenant_id ? { tid: claims.tenant_id } : {}),
  })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.user_id)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + ttlSeconds)
    .sign(new TextEncoder().encode(secret));
}

/** Returns the claims when signature, issuer, audience and expiry check out, otherwise null. */
export async function verifySessionToken(token: string, secret: string): Promise<SessionClaims | null> {
  const { jwtVerify } = await loadJose();
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(secret), { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] });
    if (typeof payload.sub !== 'string' || typeof payload.org !== 'string') return null;
    return {
      user_id: payload.sub,
      organization_id: payload.org,
      ...(typeof payload.cid === 'string' ? { credential_id: payload.cid } : {}),
      ...(typeof payload.tid === 'string' ? { tenant_id: payload.tid } : {}),
    };
  } catch {
    return null;
  }
}

/** Whether a bearer credential looks like a JWT (three base64url parts) rather than an API key. */
export const looksLikeJwt = (token: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);

/** The value of cookie `name` in a Cookie header, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}
