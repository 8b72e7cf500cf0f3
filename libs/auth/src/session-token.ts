// jose is ESM-only: loaded with import() from this CommonJS build.
type Jose = typeof import('jose', { with: { 'resolution-mode': 'import' } });
let jose: Promise<Jose> | undefined;
const loadJose = (): Promise<Jose> => (jose ??= import('jose'));

export interface SessionClaims {
  user_id: string;
  organization_id: string;
}

const ISSUER = 'tracehouse';
const AUDIENCE = 'tracehouse-api';

/** A user session as a bearer token: an HS256 JWT (jose) carrying the user and organization. */
export async function signSessionToken(claims: SessionClaims, secret: string, ttlSeconds: number): Promise<string> {
  const { SignJWT } = await loadJose();
  return new SignJWT({ org: claims.organization_id })
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
    return { user_id: payload.sub, organization_id: payload.org };
  } catch {
    return null;
  }
}

/** Whether a bearer credential looks like a JWT (three base64url parts) rather than an API key. */
export const looksLikeJwt = (token: string): boolean => /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
