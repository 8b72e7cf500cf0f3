import { createHmac } from 'node:crypto';
import type { Identity } from '@th/contracts';
import { IDENTITY_TOKEN_MAX_AGE_MS, IdentitySigner, IdentityVerifier, signIdentity, verifyIdentity } from './internal-token';

const KEY = 'internal-token-spec-key-0123456789';
const identity = (tenant: string): Identity => ({
  organization_id: '00000000-0000-4000-8000-000000000001',
  tenant_id: tenant,
  user_id: null,
  credential_id: '00000000-0000-4000-8000-000000000003',
  credential_type: 'service_key',
  plan: 'enterprise',
  permissions: ['runs:read'],
});

describe('internal identity tokens', () => {
  const t0 = Date.UTC(2026, 10, 22, 8, 0, 0);

  it('IdentitySigner reuses one signed token per identity within reuseMs, then signs anew', () => {
    const signer = new IdentitySigner(KEY, 30_000);
    const a = identity('00000000-0000-4000-8000-00000000000a');
    const first = signer.sign(a, t0);
    expect(signer.sign(a, t0 + 29_999)).toBe(first);
    const later = signer.sign(a, t0 + 30_000);
    expect(later).not.toBe(first);
    expect(verifyIdentity(later, KEY, t0 + 30_000)).toEqual(a);
    // Another identity object (a fresh resolution) gets its own token at once.
    const b = identity('00000000-0000-4000-8000-00000000000b');
    expect(verifyIdentity(signer.sign(b, t0 + 1), KEY, t0 + 1)?.tenant_id).toBe(b.tenant_id);
    // A clock that went back does not reuse a token from the future.
    expect(signer.sign(a, t0 + 10)).not.toBe(later);
  });

  it('IdentitySigner refuses a reuse time that is not well inside the token age', () => {
    expect(() => new IdentitySigner(KEY, IDENTITY_TOKEN_MAX_AGE_MS)).toThrow(/reuseMs/);
    expect(() => new IdentitySigner(KEY, -1)).toThrow(/reuseMs/);
  });

  it('IdentityVerifier accepts a valid token, from its cache too, and still expires it by age', () => {
    const v = new IdentityVerifier(KEY, 4);
    const a = identity('00000000-0000-4000-8000-00000000000a');
    const token = signIdentity(a, KEY, t0);
    expect(v.verify(token, t0 + 1)).toEqual(a);
    expect(v.size).toBe(1);
    expect(v.verify(token, t0 + 2)).toEqual(a);
    expect(v.size).toBe(1);
    expect(v.verify(token, t0 + IDENTITY_TOKEN_MAX_AGE_MS)).toEqual(a);
    expect(v.verify(token, t0 + IDENTITY_TOKEN_MAX_AGE_MS + 1)).toBeNull();
    expect(v.size).toBe(0);
    // Signed too far in the future (clock skew beyond the bound): refused.
    expect(v.verify(signIdentity(a, KEY, t0 + IDENTITY_TOKEN_MAX_AGE_MS + 10), t0)).toBeNull();
  });

  it('IdentityVerifier refuses tampered, foreign-key and malformed tokens and never caches them', () => {
    const v = new IdentityVerifier(KEY, 4);
    const a = identity('00000000-0000-4000-8000-00000000000a');
    const token = signIdentity(a, KEY, t0);
    const [payload, mac] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...a, tenant_id: '00000000-0000-4000-8000-0000000000ff', iat: t0 })).toString('base64url');
    expect(v.verify(`${forged}.${mac}`, t0)).toBeNull();
    expect(v.verify(signIdentity(a, 'another-key-0123456789abcdef', t0), t0)).toBeNull();
    expect(v.verify(`${payload}.`, t0)).toBeNull();
    expect(v.verify('no-dot', t0)).toBeNull();
    expect(v.verify(`.${mac}`, t0)).toBeNull();
    expect(v.size).toBe(0);
    // A correctly signed payload that is not an identity is refused as well.
    const junk = Buffer.from(JSON.stringify({ iat: t0, hello: 1 })).toString('base64url');
    const junkMac = createHmac('sha256', KEY).update(junk).digest('base64url');
    expect(v.verify(`${junk}.${junkMac}`, t0)).toBeNull();
    expect(v.size).toBe(0);
  });

  it('IdentityVerifier keeps at most maxEntries tokens, dropping the least recently used', () => {
    const v = new IdentityVerifier(KEY, 3);
    const tokens = Array.from({ length: 5 }, (_, i) => signIdentity(identity(`00000000-0000-4000-8000-00000000000${i}`), KEY, t0 + i));
    v.verify(tokens[0], t0);
    v.verify(tokens[1], t0);
    v.verify(tokens[2], t0);
    v.verify(tokens[0], t0); // 0 is now the most recent
    v.verify(tokens[3], t0); // evicts 1
    expect(v.size).toBe(3);
    for (const t of tokens.slice(0, 4)) expect(v.verify(t, t0)?.tenant_id).toBeDefined(); // still verifiable (1 re-verified in full)
    expect(v.size).toBe(3);
  });
});
