import type { Request } from 'express';
import type { DataSource } from 'typeorm';
import type { Identity } from '@th/contracts';
import { signSessionToken } from '@th/auth';
import { openServiceDataSource } from '@th/database';
import { DomainError } from '@th/platform';
import { createTestDatabase } from '@th/testing';
import { createAdminServices, type AdminServices } from '../admin/admin.services';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS } from '../index';
import { ApiKeyEntity } from './identity.entities';
import { IdentityService } from './identity.service';
import { BUILTIN_ROLES } from './roles';

const SECRET = 'test-session-secret-0123456789abcdef';
const req = (headers: Record<string, string>): Request => ({ headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) }) as unknown as Request;

async function status(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof DomainError ? `${err.code}: ${err.message}` : `thrown: ${(err as Error).message}`;
  }
}

describe('IdentityService (real PostgreSQL)', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let ids: IdentityService;
  let admin: AdminServices;
  let orgA: Awaited<ReturnType<IdentityService['createOrganization']>>;
  let orgB: Awaited<ReturnType<IdentityService['createOrganization']>>;
  let adminA: Identity;

  beforeAll(async () => {
    db = await createTestDatabase('th_gateway');
    ds = await openServiceDataSource({ url: db.url, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
    ids = new IdentityService(ds, { sessionSecret: SECRET, defaultCanUseAuditLogs: true });
    admin = createAdminServices(ds, ids, { sessionSecret: SECRET, sessionTtlSeconds: 3600, workspaceSecretsKey: 'test-workspace-secrets-key' });
    orgA = await ids.createOrganization({ name: 'A', plan: 'enterprise' });
    orgB = await ids.createOrganization({ name: 'B', plan: 'free', isPersonal: true });
    adminA = (await ids.resolve(req({ 'x-api-key': orgA.api_key })))!;
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('resolves a workspace key with its plan, permissions, organization features and workspace settings', async () => {
    expect(adminA).toMatchObject({
      organization_id: orgA.organization_id,
      tenant_id: orgA.workspace_id,
      credential_id: orgA.api_key_id,
      credential_type: 'service_key',
      plan: 'enterprise',
      org_features: { can_use_audit_logs: true, is_personal: false },
      workspace_settings: { retention_days: {}, usage_limits: {} },
    });
    expect(adminA.permissions).toEqual(expect.arrayContaining(['organization:manage', 'workspace:manage', 'runs:write']));
    // A personal organization does not get audit logs from the installation default.
    const b = await ids.resolve(req({ 'x-api-key': orgB.api_key }));
    expect(b?.org_features).toEqual({ can_use_audit_logs: false, is_personal: true });
    expect(b?.plan).toBe('free');
  });

  it('the organization setting overrides DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS both ways', async () => {
    const off = await ids.createOrganization({ name: 'C', canUseAuditLogs: false });
    expect((await ids.resolve(req({ 'x-api-key': off.api_key })))?.org_features?.can_use_audit_logs).toBe(false);
    const strict = new IdentityService(ds, { defaultCanUseAuditLogs: false });
    const on = await ids.createOrganization({ name: 'D', canUseAuditLogs: true, isPersonal: true });
    expect((await strict.resolve(req({ 'x-api-key': on.api_key })))?.org_features?.can_use_audit_logs).toBe(true);
    expect((await strict.resolve(req({ 'x-api-key': orgA.api_key })))?.org_features?.can_use_audit_logs).toBe(false);
  });

  it('refuses unknown, malformed, revoked and expired keys with 401, and no credentials with null', async () => {
    expect(await ids.resolve(req({}))).toBeNull();
    expect(await status(ids.resolve(req({ 'x-api-key': 'th_nope' })))).toBe('unauthorized: Invalid API key');
    expect(await status(ids.resolve(req({ authorization: 'Bearer not-a-key' })))).toBe('unauthorized: Invalid API key');
    const k1 = await admin.credentials.createKey(adminA, 'api_key', { description: 'to revoke' });
    expect((await ids.resolve(req({ 'x-api-key': k1.key })))?.credential_id).toBe(k1.id);
    await admin.credentials.deleteKey(adminA, 'api_key', k1.id);
    expect(await status(ids.resolve(req({ 'x-api-key': k1.key })))).toBe('unauthorized: API key revoked');
    const k2 = await admin.credentials.createKey(adminA, 'api_key', {});
    await ds.getRepository(ApiKeyEntity).update({ id: k2.id }, { expires_at: new Date(Date.now() - 1000) });
    ids.invalidate();
    expect(await status(ids.resolve(req({ 'x-api-key': k2.key })))).toBe('unauthorized: API key expired');
    expect(await status(admin.credentials.createKey(adminA, 'api_key', { expires_at: new Date(Date.now() - 60_000).toISOString() }))).toBe(
      'bad_request: expires_at must be in the future',
    );
  });

  it('a key of one workspace never acts in another organization or workspace', async () => {
    expect(await status(ids.resolve(req({ 'x-api-key': orgB.api_key, 'x-tenant-id': orgA.workspace_id })))).toMatch(/^forbidden/);
    expect(await status(ids.resolve(req({ 'x-api-key': orgB.api_key, 'x-organization-id': orgA.organization_id })))).toMatch(/^forbidden/);
    expect(await status(ids.resolve(req({ 'x-api-key': orgA.api_key, 'x-tenant-id': 'not-a-uuid' })))).toMatch(/^forbidden: X-Tenant-Id/);
    // Another workspace of the same organization: still refused for a workspace key.
    const ws2 = await admin.workspaces.createWorkspace(adminA, { display_name: 'second', tenant_handle: null });
    expect(await status(ids.resolve(req({ 'x-api-key': orgA.api_key, 'x-tenant-id': ws2.id })))).toMatch(/^forbidden/);
    // An organization-scoped service key names the workspace; without one it is organization-scoped (tenant '').
    const sk = await admin.credentials.createKey(adminA, 'service_key', { workspace_id: null });
    expect((await ids.resolve(req({ 'x-api-key': sk.key, 'x-tenant-id': ws2.id })))?.tenant_id).toBe(ws2.id);
    expect((await ids.resolve(req({ 'x-api-key': sk.key })))?.tenant_id).toBe('');
    expect(await status(ids.resolve(req({ 'x-api-key': sk.key, 'x-tenant-id': orgB.workspace_id })))).toMatch(/^forbidden/);
  });

  it('session bearer tokens and personal access tokens act with the user roles', async () => {
    const [user] = await admin.orgMembers.addBasicAuthUsers(adminA, { users: [{ email: 'Viewer@Example.com', password: 'correct horse battery' }] });
    expect(user.role_id).toBe(BUILTIN_ROLES.organizationUser.id);
    expect(await status(admin.sessions.login({ email: 'viewer@example.com', password: 'wrong password' }))).toBe('unauthorized: Invalid email or password');
    const { access_token } = await admin.sessions.login({ email: 'viewer@example.com', password: 'correct horse battery' });
    const session = await ids.resolve(req({ authorization: `Bearer ${access_token}` }));
    expect(session).toMatchObject({ user_id: user.user_id, credential_id: null, credential_type: 'session', tenant_id: '' });
    expect(session?.permissions).toEqual(['organization:read']);
    // Not a member of the workspace yet: refused there.
    expect(await status(ids.resolve(req({ authorization: `Bearer ${access_token}`, 'x-tenant-id': orgA.workspace_id })))).toMatch(/not a member/);
    await admin.workspaceMembers.addWorkspaceMember(adminA, { user_id: user.user_id, role_id: BUILTIN_ROLES.workspaceViewer.id });
    const inWs = await ids.resolve(req({ authorization: `Bearer ${access_token}`, 'x-tenant-id': orgA.workspace_id }));
    expect(inWs?.permissions).toEqual(expect.arrayContaining(['organization:read', 'runs:read']));
    expect(inWs?.permissions).not.toContain('runs:write');
    // The user's PAT carries the same roles, changed roles apply at once.
    const pat = await admin.credentials.createKey(session!, 'personal_access_token', { description: 'cli' });
    expect(pat).toMatchObject({ kind: 'personal_access_token', user_id: user.user_id, workspace_id: null });
    await admin.workspaceMembers.updateWorkspaceMember(adminA, user.user_id, { role_id: BUILTIN_ROLES.workspaceEditor.id });
    const viaPat = await ids.resolve(req({ 'x-api-key': pat.key, 'x-tenant-id': orgA.workspace_id }));
    expect(viaPat).toMatchObject({ credential_type: 'personal_access_token', credential_id: pat.id, user_id: user.user_id });
    expect(viaPat?.permissions).toContain('runs:write');
    // A viewer cannot administer; a workspace key cannot create PATs (no user).
    expect(await status(admin.credentials.createKey(inWs!, 'api_key', {}))).toBe('forbidden: Missing permission: workspace:manage');
    expect(await status(admin.credentials.createKey(adminA, 'personal_access_token', {}))).toMatch(/^forbidden: Personal access tokens belong to a user/);
    // Removing the member revokes their tokens in the organization.
    await admin.orgMembers.deleteOrgMember(adminA, user.user_id);
    expect(await status(ids.resolve(req({ 'x-api-key': pat.key })))).toBe('unauthorized: API key revoked');
    expect(await status(ids.resolve(req({ authorization: `Bearer ${access_token}` })))).toMatch(/not a member/);
  });

  it('refuses forged, expired and foreign-secret bearer tokens', async () => {
    const forged = await signSessionToken({ user_id: orgA.api_key_id, organization_id: orgA.organization_id }, 'another-secret-0123456789abcdefghij', 60);
    expect(await status(ids.resolve(req({ authorization: `Bearer ${forged}` })))).toBe('unauthorized: Invalid or expired bearer token');
    const expired = await signSessionToken({ user_id: orgA.api_key_id, organization_id: orgA.organization_id }, SECRET, -10);
    expect(await status(ids.resolve(req({ authorization: `Bearer ${expired}` })))).toBe('unauthorized: Invalid or expired bearer token');
    const noSessions = new IdentityService(ds, {});
    const valid = await signSessionToken({ user_id: orgA.api_key_id, organization_id: orgA.organization_id }, SECRET, 60);
    expect(await status(noSessions.resolve(req({ authorization: `Bearer ${valid}` })))).toBe('unauthorized: Bearer tokens are not enabled');
  });

  it('gives the rate limiter the verified credential, whichever header carries it, and nothing for asserted or invalid ones', async () => {
    const h = (headers: Record<string, string>) => req(headers).headers;
    const key = { kind: 'api-key', id: orgA.api_key_id };
    expect(await ids.rateLimitPrincipal(h({ 'x-api-key': orgA.api_key }))).toEqual(key);
    expect(await ids.rateLimitPrincipal(h({ authorization: `Bearer ${orgA.api_key}` }))).toEqual(key);
    // A cached principal is answered without a promise (the limiter's hot path).
    expect(ids.rateLimitPrincipal(h({ authorization: `bearer ${orgA.api_key}` }))).toEqual(key);
    // Workspace headers do not change the bucket, even refused ones (the guard refuses those).
    expect(await ids.rateLimitPrincipal(h({ 'x-api-key': orgA.api_key, 'x-tenant-id': orgB.workspace_id }))).toEqual(key);
    expect(await ids.rateLimitPrincipal(h({ 'x-user-id': 'someone' }))).toBeNull();
    expect(await ids.rateLimitPrincipal(h({ 'x-api-key': 'th_junk', 'x-user-id': 'someone' }))).toBeNull();
    expect(await ids.rateLimitPrincipal(h({ authorization: 'Bearer th_junk' }))).toBeNull();
    const userId = '0190a3c2-7b1e-7c3d-9e4f-123456789abc';
    const session = await signSessionToken({ user_id: userId, organization_id: orgA.organization_id }, SECRET, 60);
    expect(await ids.rateLimitPrincipal(h({ authorization: `Bearer ${session}`, 'x-user-id': 'someone-else' }))).toEqual({ kind: 'user', id: userId });
    const forged = await signSessionToken({ user_id: userId, organization_id: orgA.organization_id }, 'another-secret-0123456789abcdefghij', 60);
    expect(await ids.rateLimitPrincipal(h({ authorization: `Bearer ${forged}`, 'x-user-id': userId }))).toBeNull();
    // A revoked key stops counting as itself once this process invalidates (or within the cache time).
    const k = await admin.credentials.createKey(adminA, 'api_key', {});
    expect(await ids.rateLimitPrincipal(h({ 'x-api-key': k.key }))).toEqual({ kind: 'api-key', id: k.id });
    await admin.credentials.deleteKey(adminA, 'api_key', k.id);
    expect(await ids.rateLimitPrincipal(h({ 'x-api-key': k.key }))).toBeNull();
  });

  it('custom roles: scope rules, names, built-ins immutable, in-use roles kept', async () => {
    expect(await status(admin.roles.createRole(adminA, { name: 'Bad', scope: 'workspace', permissions: ['organization:manage'] }))).toMatch(/^bad_request/);
    const role = await admin.roles.createRole(adminA, { name: 'Annotator', scope: 'workspace', permissions: ['runs:read', 'runs:read'] });
    expect(role.permissions).toEqual(['runs:read']);
    expect(await status(admin.roles.createRole(adminA, { name: 'annotator', scope: 'workspace', permissions: ['runs:read'] }))).toMatch(/^conflict/);
    expect(await status(admin.roles.createRole(adminA, { name: 'workspace viewer', scope: 'workspace', permissions: ['runs:read'] }))).toMatch(/^conflict/);
    const key = await admin.credentials.createKey(adminA, 'api_key', { role_id: role.id });
    expect(key.permissions).toEqual(['runs:read']);
    await admin.roles.updateRole(adminA, role.id, { permissions: ['runs:read', 'projects:read'] });
    ids.invalidate();
    expect((await ids.resolve(req({ 'x-api-key': key.key })))?.permissions).toEqual(['runs:read', 'projects:read']);
    expect(await status(admin.roles.deleteRole(adminA, role.id))).toMatch(/^conflict/);
    expect(await status(admin.roles.deleteRole(adminA, BUILTIN_ROLES.workspaceViewer.id))).toBe('forbidden: Built-in roles cannot be deleted');
    // Roles of another organization are invisible.
    const b = (await ids.resolve(req({ 'x-api-key': orgB.api_key })))!;
    expect(await status(admin.roles.updateRole({ ...b, permissions: adminA.permissions }, role.id, { name: 'x' }))).toBe('not_found: Role not found');
    await admin.credentials.deleteKey(adminA, 'api_key', key.id);
    await admin.roles.deleteRole(adminA, role.id);
    expect((await admin.roles.listRoles(adminA)).map((r) => r.id)).not.toContain(role.id);
  });

  it('retention settings and usage limits reach the identity', async () => {
    await admin.limits.updateTtlSettings(adminA, { shortlived_days: 14, longlived_days: 400 });
    await admin.limits.upsertUsageLimit(adminA, { limit_type: 'monthly_traces', limit_value: 1000 });
    const again = await admin.limits.upsertUsageLimit(adminA, { limit_type: 'monthly_traces', limit_value: 5 });
    expect((await admin.limits.listUsageLimits(adminA)).map((l) => [l.id, l.limit_value])).toEqual([[again.id, 5]]);
    const id = await ids.resolve(req({ 'x-api-key': orgA.api_key }));
    expect(id?.workspace_settings).toEqual({ retention_days: { shortlived: 14, longlived: 400 }, usage_limits: { monthly_traces: 5 }, tenant_handle: null });
    await admin.limits.updateTtlSettings(adminA, { shortlived_days: null });
    await admin.limits.deleteUsageLimit(adminA, again.id);
    expect((await ids.resolve(req({ 'x-api-key': orgA.api_key })))?.workspace_settings).toEqual({ retention_days: { longlived: 400 }, usage_limits: {}, tenant_handle: null });
  });
});
