import { Injectable } from '@nestjs/common';
import { createHash, randomBytes, randomUUID, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { promisify } from 'node:util';
import type { Request } from 'express';
import { DataSource, In, type Repository } from 'typeorm';
import type { Identity } from '@th/contracts';
import { CSRF_HEADER, SESSION_COOKIE, cookieValue, looksLikeJwt, verifySessionToken, withRefusedIdentity, type IdentityResolver } from '@th/auth';
import { forbidden, unauthorized } from '@th/platform';
import {
  ApiKeyEntity,
  OrganizationEntity,
  OrgMemberEntity,
  RoleEntity,
  UsageLimitEntity,
  WorkspaceEntity,
  WorkspaceMemberEntity,
} from './identity.entities';
import { BUILTIN_ROLES, WORKSPACE_ADMIN_PERMISSIONS } from './roles';
import type { PrincipalResolver, RateLimitPrincipal } from '../rate-limit/rate-limiter';

/** Kept for callers that seed keys: the permissions of a workspace admin key. */
export const WORKSPACE_PERMISSIONS = WORKSPACE_ADMIN_PERMISSIONS;

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function generateApiKey(): string {
  return `th_${randomBytes(24).toString('base64url')}`;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32);
  return `scrypt$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length);
  return timingSafeEqual(actual, expected);
}

export interface IdentityOptions {
  /** HS256 secret of session bearer tokens; without it bearer JWTs are refused. */
  sessionSecret?: string;
  /** DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: audit logs for every non-personal organization without its own setting. */
  defaultCanUseAuditLogs?: boolean;
}

interface Cached<T> {
  value: T;
  at: number;
}
interface WorkspaceInfo {
  workspace: WorkspaceEntity;
  usageLimits: Record<string, number>;
}

/** Lookups are cached briefly; this process's own admin writes invalidate them at once. */
const CACHE_MS = 5_000;
const RESOLVED_CACHE_ENTRIES = 1_000;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const PRINCIPAL_CACHE_ENTRIES = 10_000;

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const v = headers[name];
  if (typeof v !== 'string' || v.trim().length === 0) return undefined;
  // The Python SDK's generated client sends its key twice (its default headers and its auth headers), which
  // node joins with ", ": the same value repeated is that value; different values stay refused as they are.
  const parts = v.split(',').map((p) => p.trim());
  return parts.every((p) => p === parts[0]) ? parts[0] || undefined : v.trim();
};

interface Credential {
  kind: 'key' | 'session';
  raw: string;
  /** Sent by the browser on its own (the web app's session cookie): writes need the CSRF checks. */
  cookie?: true;
}

/** The credential a request carries: X-API-Key first, else the Bearer token (a session JWT or a key), else the session cookie. */
function credentialOf(headers: IncomingHttpHeaders): Credential | null {
  const apiKey = header(headers, 'x-api-key');
  if (apiKey) return { kind: 'key', raw: apiKey };
  const auth = header(headers, 'authorization');
  const bearer = auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '').trim() : undefined;
  if (bearer) return { kind: looksLikeJwt(bearer) ? 'session' : 'key', raw: bearer };
  const cookie = cookieValue(header(headers, 'cookie'), SESSION_COOKIE);
  return cookie && looksLikeJwt(cookie) ? { kind: 'session', raw: cookie, cookie: true } : null;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A write the browser authenticated by itself (the cookie) must come from the app: it carries the
 * CSRF header, and Origin / Sec-Fetch-Site (when sent) name this site. SameSite=Strict already keeps
 * the cookie off cross-site requests; this holds where SameSite does not (same-site sibling hosts, old browsers).
 */
export function assertSameOriginWrite(method: string, headers: IncomingHttpHeaders): void {
  if (SAFE_METHODS.has(method.toUpperCase())) return;
  if (!header(headers, CSRF_HEADER)) throw forbidden(`A write authenticated by the session cookie needs the ${CSRF_HEADER} header`);
  const site = header(headers, 'sec-fetch-site');
  if (site && site !== 'same-origin' && site !== 'none') throw forbidden('Cross-site writes are refused');
  const origin = header(headers, 'origin');
  if (origin !== undefined) {
    let host: string | null = null;
    try {
      host = new URL(origin).host;
    } catch {
      host = null;
    }
    const forwarded = header(headers, 'x-forwarded-host');
    if (!host || (host !== header(headers, 'host') && host !== forwarded)) throw forbidden('Cross-origin writes are refused');
  }
}

/**
 * Who is calling and on which workspace: API keys, personal access tokens and service keys
 * (X-API-Key or Bearer), session bearer tokens (JWT), X-Tenant-Id and X-Organization-Id.
 */
@Injectable()
export class IdentityService implements IdentityResolver, PrincipalResolver {
  private readonly keys: Repository<ApiKeyEntity>;
  private readonly orgs: Repository<OrganizationEntity>;
  private readonly workspaces: Repository<WorkspaceEntity>;
  private readonly keyCache = new Map<string, Cached<ApiKeyEntity | null>>();
  private readonly keyByIdCache = new Map<string, Cached<ApiKeyEntity | null>>();
  /** One-time sign-in links (`npm start` prints one): token hash → the key hash it signs in as, until. */
  private readonly signInTokens = new Map<string, { keyHash: string; until: number }>();
  private readonly orgCache = new Map<string, Cached<OrganizationEntity | null>>();
  private readonly wsCache = new Map<string, Cached<WorkspaceInfo | null>>();
  private readonly userCache = new Map<string, Cached<string[] | null>>();
  /**
   * Resolved API-key identities by (raw key, X-Tenant-Id, X-Organization-Id): a hit skips the hashing and
   * the lookups. A bounded LRU (RESOLVED_CACHE_ENTRIES); an entry expires when the oldest lookup it was
   * built from would have (or at the key's expiry), so a revocation takes effect within CACHE_MS as before.
   */
  private readonly resolvedCache = new Map<string, { identity: Identity; until: number }>();
  /** Verified rate-limit principals by raw credential, for CACHE_MS; invalid credentials are not kept (keyCache has them by hash). */
  private readonly principalCache = new Map<string, { principal: NonNullable<RateLimitPrincipal>; until: number }>();

  constructor(
    private readonly ds: DataSource,
    private readonly opts: IdentityOptions = {},
  ) {
    this.keys = ds.getRepository(ApiKeyEntity);
    this.orgs = ds.getRepository(OrganizationEntity);
    this.workspaces = ds.getRepository(WorkspaceEntity);
  }

  /** Drops every cached lookup (after an admin write in this process). */
  invalidate(): void {
    this.keyCache.clear();
    this.keyByIdCache.clear();
    this.orgCache.clear();
    this.wsCache.clear();
    this.userCache.clear();
    this.resolvedCache.clear();
    this.principalCache.clear();
  }

  /**
   * Whom the rate limiter counts a request as: the verified credential, whichever header carries it, or
   * null (none, or not valid: the request counts by IP). Only the credential is checked (the workspace
   * and permissions are the guard's business), from the caches when it can; a cached principal is
   * answered without a promise. Never throws.
   */
  rateLimitPrincipal(headers: IncomingHttpHeaders): RateLimitPrincipal | Promise<RateLimitPrincipal> {
    const cred = credentialOf(headers);
    if (!cred) return null;
    const hit = this.principalCache.get(cred.raw);
    if (hit && Date.now() < hit.until) return hit.principal;
    return this.verifyPrincipal(cred).catch(() => null);
  }

  private async verifyPrincipal(cred: Credential): Promise<RateLimitPrincipal> {
    let principal: RateLimitPrincipal;
    let until = Date.now() + CACHE_MS;
    if (cred.kind === 'session') {
      if (!this.opts.sessionSecret) return null;
      const claims = await verifySessionToken(cred.raw, this.opts.sessionSecret);
      if (!claims) return null;
      principal = claims.credential_id ? { kind: 'api-key', id: claims.credential_id } : { kind: 'user', id: claims.user_id };
    } else {
      const hash = hashApiKey(cred.raw);
      const key = await this.cached(this.keyCache, hash, () => this.keys.findOne({ where: { key_hash: hash } }));
      if (!key || key.revoked_at || (key.expires_at && key.expires_at.getTime() <= Date.now())) return null;
      if (key.expires_at) until = Math.min(until, key.expires_at.getTime());
      principal = { kind: 'api-key', id: key.id };
    }
    if (this.principalCache.size >= PRINCIPAL_CACHE_ENTRIES) this.principalCache.delete(this.principalCache.keys().next().value as string);
    this.principalCache.set(cred.raw, { principal, until });
    return principal;
  }

  async resolve(req: Request): Promise<Identity | null> {
    const cred = credentialOf(req.headers);
    const requestedTenant = header(req.headers, 'x-tenant-id')?.toLowerCase();
    const requestedOrg = header(req.headers, 'x-organization-id')?.toLowerCase();
    if (requestedTenant !== undefined && !UUID_RE.test(requestedTenant)) throw forbidden('X-Tenant-Id must be a workspace id (UUID)');
    if (requestedOrg !== undefined && !UUID_RE.test(requestedOrg)) throw forbidden('X-Organization-Id must be an organization id (UUID)');
    if (!cred) return null;
    if (cred.cookie) assertSameOriginWrite(req.method, req.headers);
    if (cred.kind === 'session') return this.resolveSession(cred.raw, requestedTenant, requestedOrg);
    const raw = cred.raw;
    const resolvedKey = `${raw}\n${requestedTenant ?? ''}\n${requestedOrg ?? ''}`;
    const now = Date.now();
    const hit = this.resolvedCache.get(resolvedKey);
    if (hit) {
      this.resolvedCache.delete(resolvedKey);
      if (now < hit.until) {
        this.resolvedCache.set(resolvedKey, hit); // LRU: to the back
        return hit.identity;
      }
    }
    const oldest = { at: now };
    const identity = await this.resolveApiKey(raw, requestedTenant, requestedOrg, oldest);
    const key = this.keyCache.get(hashApiKey(raw))?.value;
    const until = Math.min(oldest.at + CACHE_MS, key?.expires_at ? key.expires_at.getTime() : Infinity);
    if (this.resolvedCache.size >= RESOLVED_CACHE_ENTRIES) this.resolvedCache.delete(this.resolvedCache.keys().next().value as string);
    this.resolvedCache.set(resolvedKey, { identity, until });
    return identity;
  }

  private async resolveApiKey(raw: string, requestedTenant: string | undefined, requestedOrg: string | undefined, oldest: { at: number }): Promise<Identity> {
    const key = await this.cached(this.keyCache, hashApiKey(raw), () => this.keys.findOne({ where: { key_hash: hashApiKey(raw) } }), oldest);
    return this.keyIdentity(key, requestedTenant, requestedOrg, oldest);
  }

  /** The identity of a stored key (found by its hash, or by its id for a session made from it), after its checks. */
  private async keyIdentity(key: ApiKeyEntity | null, requestedTenant: string | undefined, requestedOrg: string | undefined, oldest: { at: number }): Promise<Identity> {
    if (!key) throw unauthorized('Invalid API key');
    if (key.revoked_at) throw unauthorized('API key revoked');
    if (key.expires_at && key.expires_at.getTime() <= Date.now()) throw unauthorized('API key expired');
    const org = await this.cached(this.orgCache, key.organization_id, () => this.orgs.findOne({ where: { id: key.organization_id } }), oldest);
    if (!org) throw unauthorized('Invalid API key');
    // From here the key is verified: a refusal is attributed to it (audited as its organization's Failure).
    const actor: Identity = { organization_id: org.id, tenant_id: key.workspace_id ?? '', user_id: key.user_id, credential_id: key.id, credential_type: key.kind, plan: org.plan, permissions: [] };
    if (requestedOrg && requestedOrg !== key.organization_id) throw withRefusedIdentity(forbidden('This API key cannot act in the requested organization'), actor);
    let tenantId = '';
    if (key.workspace_id) {
      if (requestedTenant && requestedTenant !== key.workspace_id) throw withRefusedIdentity(forbidden('This API key cannot act in the requested workspace'), actor);
      tenantId = key.workspace_id;
    } else if (requestedTenant) {
      const ws = await this.workspaceInfo(requestedTenant, oldest);
      if (!ws || ws.workspace.organization_id !== key.organization_id) throw withRefusedIdentity(forbidden('This API key cannot act in the requested workspace'), actor);
      tenantId = requestedTenant;
    }
    const permissions =
      key.kind === 'personal_access_token' && key.user_id ? await this.userPermissions(key.user_id, org.id, tenantId, oldest) : key.permissions;
    return this.identity(org, tenantId, { user_id: key.user_id, credential_id: key.id, credential_type: key.kind }, permissions, oldest);
  }

  private async resolveSession(token: string, requestedTenant: string | undefined, requestedOrg: string | undefined): Promise<Identity> {
    if (!this.opts.sessionSecret) throw unauthorized('Bearer tokens are not enabled');
    const claims = await verifySessionToken(token, this.opts.sessionSecret);
    if (!claims) throw unauthorized('Invalid or expired bearer token');
    if (claims.credential_id) {
      // A session made from a key acts as the key, which is checked again (revoked, expired, its workspace).
      const id = claims.credential_id;
      const key = await this.cached(this.keyByIdCache, id, () => this.keys.findOne({ where: { id } }));
      if (!key || key.organization_id !== claims.organization_id) throw unauthorized('Invalid or expired bearer token');
      return this.keyIdentity(key, requestedTenant, requestedOrg, { at: Date.now() });
    }
    requestedTenant ??= claims.tenant_id;
    if (requestedOrg && requestedOrg !== claims.organization_id) throw forbidden('This session cannot act in the requested organization');
    const org = await this.organization(claims.organization_id);
    if (!org) throw unauthorized('Invalid or expired bearer token');
    let tenantId = '';
    if (requestedTenant) {
      const ws = await this.workspaceInfo(requestedTenant);
      if (!ws || ws.workspace.organization_id !== org.id) throw forbidden('This session cannot act in the requested workspace');
      tenantId = requestedTenant;
    }
    const permissions = await this.userPermissions(claims.user_id, org.id, tenantId);
    return this.identity(org, tenantId, { user_id: claims.user_id, credential_id: null, credential_type: 'session' }, permissions);
  }

  private async identity(
    org: OrganizationEntity,
    tenantId: string,
    who: Pick<Identity, 'user_id' | 'credential_id' | 'credential_type'>,
    permissions: string[],
    oldest?: { at: number },
  ): Promise<Identity> {
    const identity: Identity = {
      organization_id: org.id,
      tenant_id: tenantId,
      ...who,
      plan: org.plan,
      permissions,
      org_features: { can_use_audit_logs: this.canUseAuditLogs(org), is_personal: org.is_personal },
    };
    if (tenantId) {
      const ws = await this.workspaceInfo(tenantId, oldest);
      if (ws) {
        const retention: Record<string, number> = {};
        if (ws.workspace.shortlived_ttl_days) retention.shortlived = ws.workspace.shortlived_ttl_days;
        if (ws.workspace.longlived_ttl_days) retention.longlived = ws.workspace.longlived_ttl_days;
        identity.workspace_settings = { retention_days: retention, usage_limits: ws.usageLimits, tenant_handle: ws.workspace.tenant_handle };
      }
    }
    return identity;
  }

  canUseAuditLogs(org: Pick<OrganizationEntity, 'can_use_audit_logs' | 'is_personal'>): boolean {
    return org.can_use_audit_logs ?? (!!this.opts.defaultCanUseAuditLogs && !org.is_personal);
  }

  /**
   * A user's permissions: the organization role's, plus (on a workspace) the workspace role's.
   * A user who is not a member of the organization, or of the named workspace, is refused.
   */
  private async userPermissions(userId: string, orgId: string, tenantId: string, oldest?: { at: number }): Promise<string[]> {
    const perms = await this.cached(this.userCache, `${userId}|${orgId}|${tenantId}`, async () => {
      const member = await this.ds.getRepository(OrgMemberEntity).findOne({ where: { organization_id: orgId, user_id: userId } });
      if (!member) return null;
      const roleIds = [member.role_id];
      if (tenantId) {
        const wm = await this.ds.getRepository(WorkspaceMemberEntity).findOne({ where: { workspace_id: tenantId, user_id: userId } });
        if (wm) roleIds.push(wm.role_id);
        else if (member.role_id !== BUILTIN_ROLES.organizationAdmin.id) return null;
      }
      const roles = await this.ds.getRepository(RoleEntity).find({ where: { id: In(roleIds) } });
      return [...new Set(roles.flatMap((r) => r.permissions))];
    }, oldest);
    if (!perms) throw forbidden(tenantId ? 'The user is not a member of the requested workspace' : 'The user is not a member of this organization');
    return perms;
  }

  async organization(id: string): Promise<OrganizationEntity | null> {
    return this.cached(this.orgCache, id, () => this.orgs.findOne({ where: { id } }));
  }

  private workspaceInfo(id: string, oldest?: { at: number }): Promise<WorkspaceInfo | null> {
    return this.cached(this.wsCache, id, async () => {
      const workspace = await this.workspaces.findOne({ where: { id } });
      if (!workspace) return null;
      const limits = await this.ds.getRepository(UsageLimitEntity).find({ where: { workspace_id: id } });
      return { workspace, usageLimits: Object.fromEntries(limits.map((l) => [l.limit_type, l.limit_value])) };
    }, oldest);
  }

  /** `oldest`, when given, is lowered to the time the returned value was loaded (for the resolved-identity cache). */
  private async cached<T>(map: Map<string, Cached<T>>, key: string, load: () => Promise<T>, oldest?: { at: number }): Promise<T> {
    const hit = map.get(key);
    if (hit && Date.now() - hit.at < CACHE_MS) {
      if (oldest && hit.at < oldest.at) oldest.at = hit.at;
      return hit.value;
    }
    const at = Date.now();
    const value = await load();
    if (map.size > 10_000) map.clear();
    map.set(key, { value, at });
    if (oldest && at < oldest.at) oldest.at = at;
    return value;
  }

  /** Creates an organization with one workspace and a workspace API key (the value is returned once). */
  async createOrganization(opts: {
    name: string;
    plan?: OrganizationEntity['plan'];
    apiKey?: string;
    isPersonal?: boolean;
    canUseAuditLogs?: boolean | null;
  }): Promise<{ organization_id: string; workspace_id: string; api_key: string; api_key_id: string }> {
    const apiKey = opts.apiKey ?? generateApiKey();
    return this.ds.transaction(async (m) => {
      const now = new Date();
      const org = Object.assign(new OrganizationEntity(), {
        id: randomUUID(),
        name: opts.name,
        plan: opts.plan ?? 'enterprise',
        is_personal: opts.isPersonal ?? false,
        can_use_audit_logs: opts.canUseAuditLogs ?? null,
        created_at: now,
      });
      await m.save(org);
      const ws = Object.assign(new WorkspaceEntity(), {
        id: randomUUID(),
        organization_id: org.id,
        name: 'Default',
        shortlived_ttl_days: null,
        longlived_ttl_days: null,
        created_at: now,
      });
      await m.save(ws);
      const key = Object.assign(new ApiKeyEntity(), {
        id: randomUUID(),
        organization_id: org.id,
        workspace_id: ws.id,
        user_id: null,
        kind: 'service_key' as const,
        key_hash: hashApiKey(apiKey),
        prefix: apiKey.slice(0, 8),
        description: 'bootstrap key',
        role_id: BUILTIN_ROLES.organizationAdmin.id,
        permissions: BUILTIN_ROLES.organizationAdmin.permissions,
        created_at: now,
        expires_at: null,
        revoked_at: null,
      });
      await m.save(key);
      return { organization_id: org.id, workspace_id: ws.id, api_key: apiKey, api_key_id: key.id };
    });
  }

  /** Seeds the bootstrap organization, workspace and key unless a key with that value exists. */
  async bootstrap(apiKey: string): Promise<{ organization_id: string; workspace_id: string; created: boolean }> {
    const existing = await this.keys.findOne({ where: { key_hash: hashApiKey(apiKey) } });
    if (existing) {
      // Keys seeded before roles existed get the Organization Admin permissions.
      if (!existing.role_id) {
        await this.keys.update({ id: existing.id }, { role_id: BUILTIN_ROLES.organizationAdmin.id, permissions: BUILTIN_ROLES.organizationAdmin.permissions });
      }
      return { organization_id: existing.organization_id, workspace_id: existing.workspace_id ?? '', created: false };
    }
    const r = await this.createOrganization({ name: 'Default', plan: 'enterprise', apiKey });
    return { organization_id: r.organization_id, workspace_id: r.workspace_id, created: true };
  }

  /** A valid (not revoked, not expired) key for a session, by its value or its hash; 401 otherwise. */
  async keyForSession(ref: { raw: string } | { hash: string }): Promise<ApiKeyEntity> {
    const hash = 'raw' in ref ? hashApiKey(ref.raw) : ref.hash;
    const key = await this.keys.findOne({ where: { key_hash: hash } });
    if (!key || key.revoked_at || (key.expires_at && key.expires_at.getTime() <= Date.now())) throw unauthorized('Invalid API key');
    return key;
  }

  /** A token that signs in once, within `ttlMs`, as the key `rawKey` (this process only). */
  issueSignInToken(rawKey: string, ttlMs: number): string {
    const token = randomBytes(24).toString('base64url');
    const now = Date.now();
    for (const [k, v] of this.signInTokens) if (v.until <= now) this.signInTokens.delete(k);
    this.signInTokens.set(hashApiKey(token), { keyHash: hashApiKey(rawKey), until: now + ttlMs });
    return token;
  }

  /** The hash of the key a sign-in token stands for, once; null when unknown, used or expired. */
  consumeSignInToken(token: string): string | null {
    const id = hashApiKey(token);
    const entry = this.signInTokens.get(id);
    this.signInTokens.delete(id);
    return entry && entry.until > Date.now() ? entry.keyHash : null;
  }

  async ping(): Promise<void> {
    await this.ds.query('SELECT 1');
  }
}
