import type { IncomingHttpHeaders } from 'node:http';
import type { Request } from 'express';
import type { IdentityResolver } from '@th/auth';
import { DomainError, ErrorCode } from '@th/platform';

/** Whether a request to a deployment's address may be forwarded; a refusal in the spec's shape ({detail}). */
export type CallerVerdict = { ok: true } | { ok: false; status: 401 | 403; detail: string };

/** Checks the credential of a call to a deployment's address against the deployment's workspace. */
export interface DeploymentCallers {
  check(headers: IncomingHttpHeaders, deployment: { id: string; tenant_id: string }): Promise<CallerVerdict>;
}

const MISSING: CallerVerdict = { ok: false, status: 401, detail: 'Missing or invalid API key (X-Api-Key or Authorization: Bearer)' };
const OTHER_WORKSPACE: CallerVerdict = { ok: false, status: 403, detail: "This API key cannot call this deployment (another workspace's)" };
const CREDENTIAL_HEADERS = ['x-api-key', 'authorization', 'x-tenant-id', 'x-organization-id'] as const;

function hasCredential(headers: IncomingHttpHeaders): boolean {
  return typeof headers['x-api-key'] === 'string' || /^bearer\s+\S/i.test(String(headers.authorization ?? ''));
}

/**
 * The service's own resolver (standalone: the gateway's IdentityService in process), as the API routes verify
 * keys: the caller's workspace must be the deployment's. A resolver that cannot verify keys (a cluster service
 * trusts only the gateway's signed header) refuses every call.
 */
export class ResolverCallers implements DeploymentCallers {
  constructor(private readonly resolver: () => IdentityResolver | null) {}

  async check(headers: IncomingHttpHeaders, deployment: { tenant_id: string }): Promise<CallerVerdict> {
    const resolver = this.resolver();
    if (!resolver || !hasCredential(headers)) return MISSING;
    try {
      const identity = await resolver.resolve({ headers, method: 'POST', path: '/', url: '/' } as Request);
      if (!identity) return MISSING;
      return identity.tenant_id === deployment.tenant_id ? { ok: true } : OTHER_WORKSPACE;
    } catch (err) {
      return err instanceof DomainError && err.code === ErrorCode.Forbidden ? OTHER_WORKSPACE : MISSING;
    }
  }
}

/** Verdicts kept per (credential, deployment), so a stream of calls is not a stream of checks. */
const CACHE_MS = 5_000;
const CACHE_ENTRIES = 1_000;

/**
 * The cluster form: the control plane does not hold the keys, the gateway does. A call is let through when the
 * gateway, given the caller's credential, answers GET /v2/deployments/{id} (the deployment is visible only to its
 * own workspace); 401 stays 401, anything else is a 403.
 */
export class GatewayCallers implements DeploymentCallers {
  private readonly cache = new Map<string, { verdict: CallerVerdict; until: number }>();
  constructor(private readonly gatewayUrl: string) {}

  async check(headers: IncomingHttpHeaders, deployment: { id: string }): Promise<CallerVerdict> {
    if (!hasCredential(headers)) return MISSING;
    const sent: Record<string, string> = {};
    for (const h of CREDENTIAL_HEADERS) if (typeof headers[h] === 'string') sent[h] = headers[h] as string;
    const key = `${deployment.id}\n${CREDENTIAL_HEADERS.map((h) => sent[h] ?? '').join('\n')}`;
    const hit = this.cache.get(key);
    if (hit && Date.now() < hit.until) return hit.verdict;
    let verdict: CallerVerdict;
    try {
      const res = await fetch(`${this.gatewayUrl.replace(/\/$/, '')}/v2/deployments/${encodeURIComponent(deployment.id)}`, { headers: sent, signal: AbortSignal.timeout(5000) });
      await res.body?.cancel();
      verdict = res.status === 200 ? { ok: true } : res.status === 401 ? MISSING : OTHER_WORKSPACE;
    } catch {
      return { ok: false, status: 401, detail: 'The API key could not be verified now' }; // not kept: the next call asks again
    }
    if (this.cache.size >= CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(key, { verdict, until: Date.now() + CACHE_MS });
    return verdict;
  }
}
