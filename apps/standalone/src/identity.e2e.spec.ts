import { randomUUID } from 'node:crypto';
import type { AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import type { DataSource } from 'typeorm';
import { BUILTIN_ROLES, IdentityService } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
type Init = { method?: string; json?: unknown; headers?: Record<string, string> };
const DAY = 86_400_000;

describe('identity and administration through the standalone service', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone({ SERVICE_VERSION: '0.12.42', DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' });
    await svc.app.get(EventBus).subscribe('audit', { groupId: `identity-e2e-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  /** HTTP without the bootstrap key unless headers carry one. */
  const call = (path: string, init: Init = {}) =>
    fetch(`${svc.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
  const admin = (path: string, init: Init = {}) => call(path, { ...init, headers: { 'x-api-key': svc.apiKey, ...init.headers } });
  const json = async (res: Response, status: number): Promise<Json> => {
    const text = await res.text();
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
    return text ? (JSON.parse(text) as Json) : {};
  };
  const recorded = (operation: string, status?: string) => audit.filter((r) => r.operation === operation && (!status || r.status === status));

  it('/info reports the version and the version-gated features this installation offers', async () => {
    const info = await json(await call('/api/v1/info'), 200);
    expect(info.version).toBe('0.12.42');
    expect(info.features).toEqual({ scheduled_exports: true, export_fields: true, audit_logs: true });
  });

  it('API keys: created once with the whole value, listed by prefix only, revoked at once; each a tracked operation', async () => {
    const created = await json(await admin('/api/v1/api-key', { method: 'POST', json: { description: 'ci' } }), 200);
    expect(created).toMatchObject({ kind: 'api_key', workspace_id: svc.workspaceId, description: 'ci', expires_at: null });
    const key = created.key as string;
    expect(key.startsWith(created.short_key as string)).toBe(true);
    const listed = (await json(await admin('/api/v1/api-key'), 200)) as unknown as Json[];
    const mine = listed.find((k) => k.id === created.id);
    expect(mine).toBeDefined();
    expect(mine).not.toHaveProperty('key');
    expect(JSON.stringify(listed)).not.toContain(key);
    expect((await call('/api/v1/sessions', { headers: { 'x-api-key': key } })).status).toBe(200);
    const [rec] = recorded('create_api_key', 'Success').filter((r) => r.resources.some((x) => x.id === created.id));
    expect(rec).toMatchObject({
      organization_id: svc.organizationId,
      workspace_id: svc.workspaceId,
      credential_type: 'service_key',
      service: 'standalone',
      resources: [{ type: 'api_key', id: created.id }],
      request: { method: 'POST', path: '/api/v1/api-key' },
    });
    expect(rec.credential_id).toEqual(expect.any(String));
    await json(await admin(`/api/v1/api-key/${created.id as string}`, { method: 'DELETE' }), 200);
    const after = await call('/api/v1/sessions', { headers: { 'x-api-key': key } });
    expect(after.status).toBe(401);
    expect(await after.json()).toEqual({ detail: 'API key revoked' });
    expect(recorded('delete_api_key', 'Success').some((r) => r.resources[0]?.id === created.id)).toBe(true);
  });

  it('bad credential requests get a clear 4xx, write nothing and are recorded as failures', async () => {
    const before = ((await json(await admin('/api/v1/api-key'), 200)) as unknown as Json[]).length;
    const failuresBefore = recorded('create_api_key', 'Failure').length;
    const invalid = await admin('/api/v1/api-key', { method: 'POST', json: { expires_at: 'soon', extra: 1 } });
    expect(invalid.status).toBe(422);
    const detail = ((await invalid.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] }).detail;
    expect(detail.map((d) => d.loc)).toEqual(expect.arrayContaining([['body', 'expires_at'], ['body']]));
    const past = await admin('/api/v1/api-key', { method: 'POST', json: { expires_at: new Date(Date.now() - DAY).toISOString() } });
    expect(past.status).toBe(400);
    expect(await past.json()).toEqual({ detail: 'expires_at must be in the future' });
    expect(((await json(await admin('/api/v1/api-key'), 200)) as unknown as Json[]).length).toBe(before);
    expect(recorded('create_api_key', 'Failure').length).toBe(failuresBefore + 2);
    expect(recorded('create_api_key', 'Failure').at(-1)?.error).toBe('expires_at must be in the future');
    const missing = await admin(`/api/v1/api-key/${randomUUID()}`, { method: 'DELETE' });
    expect(missing.status).toBe(404);
    expect(recorded('delete_api_key', 'Failure').at(-1)?.error).toBe('API key not found');
    expect((await admin('/api/v1/api-key/not-a-uuid', { method: 'DELETE' })).status).toBe(422);

    // Missing, unknown and malformed keys; a malformed tenant header.
    expect((await call('/api/v1/sessions')).status).toBe(401);
    expect(await (await call('/api/v1/sessions', { headers: { 'x-api-key': 'th_unknown' } })).json()).toEqual({ detail: 'Invalid API key' });
    expect((await call('/api/v1/sessions', { headers: { authorization: 'Bearer a.b.c' } })).status).toBe(401);
    expect((await admin('/api/v1/sessions', { headers: { 'x-tenant-id': 'workspace-1' } })).status).toBe(403);
  });

  it('an expiring key stops working when it expires', async () => {
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const created = await json(await admin('/api/v1/api-key', { method: 'POST', json: { expires_at: expiresAt } }), 200);
    expect(created.expires_at).toBe(expiresAt);
    expect((await call('/api/v1/sessions', { headers: { 'x-api-key': created.key as string } })).status).toBe(200);
    let last: Response | undefined;
    for (let i = 0; i < 50; i++) {
      last = await call('/api/v1/sessions', { headers: { 'x-api-key': created.key as string } });
      if (last.status !== 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(last?.status).toBe(401);
    expect(await last?.json()).toEqual({ detail: 'API key expired' });
  });

  it('a key of one organization never acts in another: 403 or 404, never data', async () => {
    const other = await svc.app.get(IdentityService).createOrganization({ name: `other-${randomUUID()}`, plan: 'free' });
    const project = await json(await admin('/api/v1/sessions', { method: 'POST', json: { name: `p-${randomUUID()}` } }), 200);
    const asOther = (path: string, init: Init = {}) => call(path, { ...init, headers: { 'x-api-key': other.api_key, ...init.headers } });
    expect((await asOther('/api/v1/sessions', { headers: { 'x-tenant-id': svc.workspaceId } })).status).toBe(403);
    expect((await asOther('/api/v1/workspaces', { headers: { 'x-organization-id': svc.organizationId } })).status).toBe(403);
    expect((await asOther(`/api/v1/sessions/${project.id as string}`)).status).toBe(404);
    const mine = await json(await admin('/api/v1/api-key', { method: 'POST', json: {} }), 200);
    expect((await asOther(`/api/v1/api-key/${mine.id as string}`, { method: 'DELETE' })).status).toBe(404);
    expect((await call('/api/v1/sessions', { headers: { 'x-api-key': mine.key as string } })).status).toBe(200);
    // The free plan's organization admin lists only its own workspace.
    const list = (await json(await asOther('/api/v1/workspaces'), 200)) as unknown as Json[];
    expect(list.map((w) => w.id)).toEqual([other.workspace_id]);
  });

  it('workspaces and organization-scoped service keys: X-Tenant-Id picks the workspace, X-Organization-Id must match', async () => {
    expect((await admin('/api/v1/workspaces', { method: 'POST', json: { name: '' } })).status).toBe(422);
    expect(recorded('create_workspace', 'Failure').length).toBeGreaterThan(0);
    const ws = await json(await admin('/api/v1/workspaces', { method: 'POST', json: { name: 'Research' } }), 200);
    expect(recorded('create_workspace', 'Success').some((r) => r.resources[0]?.id === ws.id)).toBe(true);
    const renamed = await json(await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'PATCH', json: { name: 'Research 2' } }), 200);
    expect(renamed.name).toBe('Research 2');
    // The default workspace's key cannot act in the new workspace.
    expect((await admin('/api/v1/sessions', { headers: { 'x-tenant-id': ws.id as string } })).status).toBe(403);

    const sk = await json(await admin('/api/v1/service-keys', { method: 'POST', json: { workspace_id: null, description: 'org-wide' } }), 200);
    expect(sk).toMatchObject({ kind: 'service_key', workspace_id: null, role_id: BUILTIN_ROLES.organizationAdmin.id });
    const asSk = (path: string, headers: Record<string, string> = {}) => call(path, { headers: { 'x-api-key': sk.key as string, ...headers } });
    const noWs = await asSk('/api/v1/sessions');
    expect(noWs.status).toBe(403);
    expect(await noWs.json()).toEqual({ detail: '{"error":"org_scoped_key_requires_workspace"}' });
    expect((await asSk('/api/v1/sessions', { 'x-tenant-id': ws.id as string })).status).toBe(200);
    expect((await asSk('/api/v1/workspaces', { 'x-organization-id': svc.organizationId })).status).toBe(200);
    expect((await asSk('/api/v1/workspaces', { 'x-organization-id': randomUUID() })).status).toBe(403);

    await json(await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'DELETE' }), 200);
    expect(recorded('delete_workspace', 'Success').some((r) => r.resources[0]?.id === ws.id)).toBe(true);
    expect((await asSk('/api/v1/sessions', { 'x-tenant-id': ws.id as string })).status).toBe(403);
    expect((await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'DELETE' })).status).toBe(404);
    expect((await admin(`/api/v1/workspaces/${svc.workspaceId}`, { method: 'DELETE' })).status).toBe(409);
    await json(await admin(`/api/v1/service-keys/${sk.id as string}`, { method: 'DELETE' }), 200);
    expect(recorded('delete_service_key', 'Success').length).toBeGreaterThan(0);
  });

  it("workspaces in the published API's shape: display_name and tenant_handle in and out, the older name still read", async () => {
    const handle = `team-${randomUUID().slice(0, 8)}`;
    const ws = await json(await admin('/api/v1/workspaces', { method: 'POST', json: { display_name: 'Evals', tenant_handle: handle } }), 200);
    expect(ws).toMatchObject({ display_name: 'Evals', name: 'Evals', tenant_handle: handle, organization_id: svc.organizationId });
    const listed = ((await json(await admin('/api/v1/workspaces'), 200)) as unknown as Json[]).find((w) => w.id === ws.id);
    expect(listed).toMatchObject({ display_name: 'Evals', tenant_handle: handle });
    // Bad bodies: 422 with the spec's shape, nothing written.
    const before = ((await json(await admin('/api/v1/workspaces'), 200)) as unknown as Json[]).length;
    for (const bad of [{}, { display_name: '' }, { display_name: 'x', tenant_handle: 'Not A Handle' }, { display_name: 'a', name: 'b' }, { display_name: 'x', extra: 1 }]) {
      const res = await admin('/api/v1/workspaces', { method: 'POST', json: bad });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
      expect(body.detail[0]).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    }
    expect(((await json(await admin('/api/v1/workspaces'), 200)) as unknown as Json[]).length).toBe(before);
    // A handle is unique in the installation.
    expect((await admin('/api/v1/workspaces', { method: 'POST', json: { display_name: 'Twin', tenant_handle: handle } })).status).toBe(409);
    // PATCH: null means no change for the name; tenant_handle null removes the handle.
    const renamed = await json(await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'PATCH', json: { display_name: 'Evals 2', name: null } }), 200);
    expect(renamed).toMatchObject({ display_name: 'Evals 2', name: 'Evals 2', tenant_handle: handle });
    const cleared = await json(await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'PATCH', json: { tenant_handle: null } }), 200);
    expect(cleared).toMatchObject({ display_name: 'Evals 2', tenant_handle: null });
    expect((await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'PATCH', json: { tenant_handle: 'BAD!' } })).status).toBe(422);
    // Another organization's workspace id is as unknown as a free one.
    const other = await svc.app.get(IdentityService).createOrganization({ name: `other-${randomUUID()}`, plan: 'enterprise' });
    const asOther = (path: string, init: Init = {}) => call(path, { ...init, headers: { 'x-api-key': other.api_key, ...init.headers } });
    expect((await asOther(`/api/v1/workspaces/${ws.id as string}`, { method: 'PATCH', json: { display_name: 'mine' } })).status).toBe(404);
    expect((await asOther(`/api/v1/workspaces/${randomUUID()}`, { method: 'PATCH', json: { display_name: 'mine' } })).status).toBe(404);
    await json(await admin(`/api/v1/workspaces/${ws.id as string}`, { method: 'DELETE' }), 200);
  });

  it('members, invitations, sessions and personal access tokens; a role without the permission gets 403, recorded', async () => {
    const email = `ada-${randomUUID()}@example.com`;
    expect((await admin('/api/v1/orgs/current/members/basic', { method: 'POST', json: { users: [{ email, password: 'short' }] } })).status).toBe(422);
    const [user] = (await json(
      await admin('/api/v1/orgs/current/members/basic', { method: 'POST', json: { users: [{ email, password: 'a long password', full_name: 'Ada' }] } }),
      200,
    )) as unknown as Json[] & { user_id: string }[];
    expect(recorded('add_basic_auth_users_to_org', 'Success').some((r) => r.resources[0]?.id === user.user_id)).toBe(true);
    expect((await call('/api/v1/auth/login', { method: 'POST', json: { email, password: 'wrong password' } })).status).toBe(401);
    const login = await json(await call('/api/v1/auth/login', { method: 'POST', json: { email, password: 'a long password' } }), 200);
    expect(login.token_type).toBe('bearer');
    const bearer = { authorization: `Bearer ${login.access_token as string}` };

    // An Organization User reads the organization but cannot manage it: the refusal is recorded with the actor.
    expect((await call('/api/v1/workspaces', { headers: bearer })).status).toBe(200);
    const refused = await call('/api/v1/workspaces', { method: 'POST', json: { name: 'nope' }, headers: bearer });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ detail: 'Missing permission: organization:manage' });
    expect(recorded('create_workspace', 'Failure').at(-1)).toMatchObject({ user_id: user.user_id, credential_id: null, credential_type: 'session' });
    expect((await call('/api/v1/sessions', { headers: { ...bearer, 'x-tenant-id': svc.workspaceId } })).status).toBe(403);

    // Workspace membership: viewer, then editor; the PAT acts with the user's roles.
    await json(await admin('/api/v1/workspaces/current/members', { method: 'POST', json: { user_id: user.user_id, role_id: BUILTIN_ROLES.workspaceViewer.id } }), 200);
    expect((await admin('/api/v1/workspaces/current/members', { method: 'POST', json: { user_id: user.user_id } })).status).toBe(409);
    const asViewer = { ...bearer, 'x-tenant-id': svc.workspaceId };
    expect((await call('/api/v1/sessions', { headers: asViewer })).status).toBe(200);
    expect((await call('/api/v1/runs/query', { method: 'POST', json: {}, headers: asViewer })).status).toBe(200);
    // A viewer reads but never writes workspace data.
    const viewerWrite = await call('/api/v1/sessions', { method: 'POST', json: { name: `viewer-${randomUUID()}` }, headers: asViewer });
    expect(viewerWrite.status).toBe(403);
    expect((await call('/api/v1/runs', { method: 'POST', json: { id: randomUUID(), name: 'v', run_type: 'chain', inputs: {} }, headers: asViewer })).status).toBe(403);
    const viewerKey = await call('/api/v1/api-key', { method: 'POST', json: {}, headers: { ...bearer, 'x-tenant-id': svc.workspaceId } });
    expect(viewerKey.status).toBe(403);
    expect(recorded('create_api_key', 'Failure').at(-1)).toMatchObject({ user_id: user.user_id, error: 'Missing permission: workspace:manage' });
    const pat = await json(await call('/api/v1/api-key/current', { method: 'POST', json: { description: 'laptop' }, headers: bearer }), 200);
    expect(pat).toMatchObject({ kind: 'personal_access_token', user_id: user.user_id });
    expect(recorded('create_personal_access_token', 'Success').at(-1)?.resources).toEqual([{ type: 'personal_access_token', id: pat.id }]);
    const asPat = { 'x-api-key': pat.key as string, 'x-tenant-id': svc.workspaceId };
    expect((await call('/api/v1/sessions', { headers: asPat })).status).toBe(200);
    await json(await admin(`/api/v1/workspaces/current/members/${user.user_id}`, { method: 'PATCH', json: { role_id: BUILTIN_ROLES.workspaceEditor.id } }), 200);
    expect((await call('/api/v1/sessions', { method: 'POST', json: { name: `editor-${randomUUID()}` }, headers: asPat })).status).toBe(200);
    expect((await admin(`/api/v1/workspaces/current/members/${user.user_id}`, { method: 'PATCH', json: { role_id: BUILTIN_ROLES.organizationAdmin.id } })).status).toBe(400);
    expect(recorded('update_workspace_member', 'Success').length).toBe(1);
    expect(recorded('update_workspace_member', 'Failure').length).toBe(1);

    // Invitations wait as pending members until deleted (or consumed by a basic-auth user of that email).
    const invite = await json(await admin('/api/v1/orgs/current/members', { method: 'POST', json: { email: 'grace@example.com', workspace_ids: [svc.workspaceId] } }), 200);
    expect((await admin('/api/v1/orgs/current/members', { method: 'POST', json: { email: 'grace@example.com' } })).status).toBe(409);
    expect((await admin('/api/v1/orgs/current/members', { method: 'POST', json: { email } })).status).toBe(409);
    const members = await json(await admin('/api/v1/orgs/current/members'), 200);
    expect((members.pending as Json[]).map((p) => p.email)).toEqual(['grace@example.com']);
    expect((members.members as Json[]).map((m) => m.email)).toContain(email);
    await json(await admin(`/api/v1/orgs/current/members/pending/${invite.id as string}`, { method: 'DELETE' }), 200);
    expect(recorded('invite_user_to_org', 'Success').length).toBe(1);
    expect(recorded('delete_org_pending_member', 'Success').length).toBe(1);

    // Promote, then remove: membership and tokens go with the member.
    await json(await admin(`/api/v1/orgs/current/members/${user.user_id}`, { method: 'PATCH', json: { role_id: BUILTIN_ROLES.organizationOperator.id } }), 200);
    expect(recorded('update_org_member', 'Success').length).toBe(1);
    await json(await admin(`/api/v1/workspaces/current/members/${user.user_id}`, { method: 'DELETE' }), 200);
    expect((await call('/api/v1/sessions', { headers: asPat })).status).toBe(403);
    expect(recorded('delete_workspace_member', 'Success').length).toBe(1);
    await json(await admin(`/api/v1/orgs/current/members/${user.user_id}`, { method: 'DELETE' }), 200);
    expect(recorded('delete_org_member', 'Success').length).toBe(1);
    expect((await call('/api/v1/sessions', { headers: asPat })).status).toBe(401);
    expect((await call('/api/v1/workspaces', { headers: bearer })).status).toBe(403);
  });

  it('the organization: can_use_audit_logs setting over the installation default, a tracked update', async () => {
    const org = await json(await admin('/api/v1/orgs/current'), 200);
    expect(org).toMatchObject({ id: svc.organizationId, plan: 'enterprise', is_personal: false, can_use_audit_logs: null, audit_logs_enabled: true });
    expect((await admin('/api/v1/orgs/current', { method: 'PATCH', json: { can_use_audit_logs: 'yes' } })).status).toBe(422);
    const off = await json(await admin('/api/v1/orgs/current', { method: 'PATCH', json: { can_use_audit_logs: false } }), 200);
    expect(off).toMatchObject({ can_use_audit_logs: false, audit_logs_enabled: false });
    // The setting reaches the identity the audit service gates on.
    expect((await admin('/api/v1/audit-logs', { headers: { 'x-organization-id': svc.organizationId } })).status).toBe(403);
    const back = await json(await admin('/api/v1/orgs/current', { method: 'PATCH', json: { can_use_audit_logs: null } }), 200);
    expect(back).toMatchObject({ can_use_audit_logs: null, audit_logs_enabled: true });
    expect((await admin('/api/v1/audit-logs', { headers: { 'x-organization-id': svc.organizationId } })).status).toBe(200);
    expect(recorded('update_organization_info').map((r) => r.status)).toEqual(['Failure', 'Success', 'Success']);
    expect(recorded('update_organization_info', 'Success')[0].resources).toEqual([{ type: 'organization', id: svc.organizationId }]);
  });

  it('custom roles', async () => {
    expect((await admin('/api/v1/orgs/current/roles', { method: 'POST', json: { name: 'x', permissions: ['runs:fly'] } })).status).toBe(422);
    expect((await admin('/api/v1/orgs/current/roles', { method: 'POST', json: { name: 'x', permissions: ['organization:manage'] } })).status).toBe(400);
    const role = await json(await admin('/api/v1/orgs/current/roles', { method: 'POST', json: { name: 'Labeler', permissions: ['runs:read', 'projects:read'] } }), 200);
    expect(role).toMatchObject({ scope: 'workspace', builtin: false, organization_id: svc.organizationId });
    const key = await json(await admin('/api/v1/api-key', { method: 'POST', json: { role_id: role.id } }), 200);
    expect(key.permissions).toEqual(['runs:read', 'projects:read']);
    const updated = await json(await admin(`/api/v1/orgs/current/roles/${role.id as string}`, { method: 'PATCH', json: { description: 'labels runs' } }), 200);
    expect(updated.description).toBe('labels runs');
    expect((await admin(`/api/v1/orgs/current/roles/${role.id as string}`, { method: 'DELETE' })).status).toBe(409);
    expect((await admin(`/api/v1/orgs/current/roles/${BUILTIN_ROLES.workspaceAdmin.id}`, { method: 'PATCH', json: { name: 'Boss' } })).status).toBe(403);
    await json(await admin(`/api/v1/api-key/${key.id as string}`, { method: 'DELETE' }), 200);
    await json(await admin(`/api/v1/orgs/current/roles/${role.id as string}`, { method: 'DELETE' }), 200);
    const roles = (await json(await admin('/api/v1/orgs/current/roles'), 200)) as unknown as Json[];
    expect(roles.filter((r) => r.builtin).map((r) => r.name)).toEqual(
      expect.arrayContaining(['Organization Admin', 'Organization Operator', 'Workspace Admin', 'Workspace Editor', 'Workspace Viewer']),
    );
    expect(roles.map((r) => r.id)).not.toContain(role.id);
    expect(recorded('create_role', 'Success').length).toBe(1);
    expect(recorded('create_role', 'Failure').length).toBe(2);
    expect(recorded('update_role', 'Failure').length).toBe(1);
    expect(recorded('delete_role').map((r) => r.status)).toEqual(['Failure', 'Success']);
  });

  it('workspace secrets are write-only', async () => {
    expect((await admin('/api/v1/workspaces/current/secrets', { method: 'POST', json: [{ key: 'bad key', value: 'x' }] })).status).toBe(422);
    const keys = await json(await admin('/api/v1/workspaces/current/secrets', { method: 'POST', json: [{ key: 'OPENAI_API_KEY', value: 'sk-secret-value' }, { key: 'OTHER', value: 'v' }] }), 200);
    expect((keys as unknown as Json[]).map((k) => k.key)).toEqual(['OPENAI_API_KEY', 'OTHER']);
    const listed = await admin('/api/v1/workspaces/current/secrets');
    expect(await listed.text()).not.toContain('sk-secret-value');
    const after = (await json(await admin('/api/v1/workspaces/current/secrets', { method: 'POST', json: [{ key: 'OTHER', value: null }] }), 200)) as unknown as Json[];
    expect(after.map((k) => k.key)).toEqual(['OPENAI_API_KEY']);
    expect(recorded('update_workspace_secrets').map((r) => r.status)).toEqual(['Failure', 'Success', 'Success']);
    expect(recorded('update_workspace_secrets', 'Success')[0].resources).toEqual([{ type: 'workspace', id: svc.workspaceId }]);
  });

  it('retention: each run trace_tier maps to the workspace TTL and ClickHouse drops expired runs', async () => {
    expect((await admin('/api/v1/workspaces/current/ttl-settings', { method: 'PUT', json: { shortlived_days: 0 } })).status).toBe(422);
    expect((await admin('/api/v1/workspaces/current/ttl-settings', { method: 'PUT', json: {} })).status).toBe(422);
    const ttl = await json(await admin('/api/v1/workspaces/current/ttl-settings', { method: 'PUT', json: { shortlived_days: 14, longlived_days: 400 } }), 200);
    expect(ttl).toEqual({ workspace_id: svc.workspaceId, shortlived_days: 14, longlived_days: 400 });
    expect(recorded('update_ttl_settings').map((r) => r.status)).toEqual(['Failure', 'Failure', 'Success']);

    // Started 30 days ago: a shortlived run is past its 14 days, a longlived one has 400; a recent shortlived run has 14.
    const old = new Date(Date.now() - 30 * DAY);
    const recent = new Date(Date.now() - DAY);
    const project = `retention-${randomUUID()}`;
    const [expired, kept, fresh] = [randomUUID(), randomUUID(), randomUUID()];
    const runs: [string, string, Date][] = [
      [expired, 'shortlived', old],
      [kept, 'longlived', old],
      [fresh, 'shortlived', recent],
    ];
    for (const [id, tier, start] of runs) {
      const res = await admin('/api/v1/runs', {
        method: 'POST',
        json: { id, name: `${tier}-${start.getTime()}`, run_type: 'chain', start_time: start.toISOString(), inputs: {}, session_name: project, trace_tier: tier },
      });
      expect(res.status).toBe(202);
    }
    const at = (start: Date, days: number) => new Date(start.getTime() + days * DAY).toISOString().slice(0, 19).replace('T', ' ');
    // ClickHouse applies the TTL as it writes and merges parts: the expired run is not kept.
    await svc.ch.command('OPTIMIZE TABLE runs FINAL');
    const rows = await svc.ch.query<{ id: string; trace_tier: string; expires_at: string }>(
      'SELECT id, trace_tier, toString(expires_at) AS expires_at FROM runs WHERE tenant_id = {t:UUID} AND id IN {ids:Array(UUID)} ORDER BY expires_at',
      { t: svc.workspaceId, ids: [expired, kept, fresh] },
    );
    expect(rows).toEqual([
      { id: fresh, trace_tier: 'shortlived', expires_at: at(recent, 14) },
      { id: kept, trace_tier: 'longlived', expires_at: at(old, 400) },
    ]);
    expect((await admin(`/api/v1/runs/${expired}`)).status).toBe(404);
    expect((await admin(`/api/v1/runs/${kept}`)).status).toBe(200);
    expect((await admin(`/api/v1/runs/${fresh}`)).status).toBe(200);
    // Runs written without retention settings never expire.
    await json(await admin('/api/v1/workspaces/current/ttl-settings', { method: 'PUT', json: { shortlived_days: null, longlived_days: null } }), 200);
    const forever = randomUUID();
    expect((await admin('/api/v1/runs', { method: 'POST', json: { id: forever, name: 'f', run_type: 'chain', start_time: old.toISOString(), inputs: {}, session_name: project, trace_tier: 'shortlived' } })).status).toBe(202);
    const [f] = await svc.ch.query<{ expires_at: string }>('SELECT toString(expires_at) AS expires_at FROM runs WHERE tenant_id = {t:UUID} AND id = {id:UUID}', {
      t: svc.workspaceId,
      id: forever,
    });
    expect(f.expires_at).toBe('2106-01-01 00:00:00');
  });

  it('usage limits: ingest refuses new traces past monthly_traces with 429 and writes nothing', async () => {
    // A fresh workspace, so this month's count starts at zero.
    const ws = await json(await admin('/api/v1/workspaces', { method: 'POST', json: { name: 'limited' } }), 200);
    const sk = await json(await admin('/api/v1/service-keys', { method: 'POST', json: { workspace_id: ws.id } }), 200);
    const asWs = (path: string, init: Init = {}) => call(path, { ...init, headers: { 'x-api-key': sk.key as string, ...init.headers } });
    expect((await asWs('/api/v1/usage-limits', { method: 'PUT', json: { limit_type: 'monthly_traces', limit_value: -1 } })).status).toBe(422);
    expect((await asWs('/api/v1/usage-limits', { method: 'PUT', json: { limit_type: 'monthly_runs', limit_value: 5 } })).status).toBe(422);
    const limit = await json(await asWs('/api/v1/usage-limits', { method: 'PUT', json: { limit_type: 'monthly_traces', limit_value: 2 } }), 200);
    expect(limit).toMatchObject({ workspace_id: ws.id, limit_type: 'monthly_traces', limit_value: 2 });
    const post = (id: string, extra: Json = {}) =>
      asWs('/api/v1/runs', { method: 'POST', json: { id, name: 'r', run_type: 'chain', inputs: {}, session_name: 'limited', ...extra } });
    const roots = [randomUUID(), randomUUID(), randomUUID()];
    expect((await post(roots[0])).status).toBe(202);
    expect((await post(roots[1])).status).toBe(202);
    const refused = await post(roots[2]);
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { detail: string }).detail).toBe(
      "Usage limit exceeded: this workspace's monthly_traces limit is 2 and 2 traces were ingested this month",
    );
    expect((await asWs(`/api/v1/runs/${roots[2]}`)).status).toBe(404);
    // Runs of an existing trace are not new traces.
    const child = randomUUID();
    expect((await post(child, { parent_run_id: roots[0], trace_id: roots[0] })).status).toBe(202);
    await json(await asWs(`/api/v1/usage-limits/${limit.id as string}`, { method: 'DELETE' }), 200);
    expect((await post(roots[2])).status).toBe(202);
    expect((await asWs(`/api/v1/usage-limits/${limit.id as string}`, { method: 'DELETE' })).status).toBe(404);
    expect(recorded('update_usage_limit').map((r) => r.status)).toEqual(['Failure', 'Failure', 'Success']);
    expect(recorded('delete_usage_limit').map((r) => r.status)).toEqual(['Success', 'Failure']);
    expect(recorded('update_usage_limit', 'Success')[0]).toMatchObject({ workspace_id: ws.id, resources: [{ type: 'usage_limit', id: limit.id }, { type: 'workspace', id: ws.id }] });
  });
  it('invitations: the invited user claims one and joins that organization with its roles; bad claims get a clear 4xx and change nothing', async () => {
    const other = await svc.app.get(IdentityService).createOrganization({ name: `inviting-${randomUUID()}`, plan: 'enterprise' });
    const asOther = (path: string, init: Init = {}) => call(path, { ...init, headers: { 'x-api-key': other.api_key, ...init.headers } });
    // Two users of this organization, each with a session here.
    const [ada, bob, cy] = ['ada', 'bob', 'cy'].map((n) => `${n}-${randomUUID()}@example.com`);
    const users = (await json(
      await admin('/api/v1/orgs/current/members/basic', { method: 'POST', json: { users: [ada, bob, cy].map((email) => ({ email, password: 'a long password' })) } }),
      200,
    )) as unknown as { user_id: string }[];
    const session = async (email: string) => ({ authorization: `Bearer ${(await json(await call('/api/v1/auth/login', { method: 'POST', json: { email, password: 'a long password' } }), 200)).access_token as string}` });
    const [asAda, asBob, asCy] = [await session(ada), await session(bob), await session(cy)];
    // The other organization invites Ada (upper case: emails match case-insensitively) to its workspace as an editor.
    const invite = await json(
      await asOther('/api/v1/orgs/current/members', { method: 'POST', json: { email: ada.toUpperCase(), workspace_ids: [other.workspace_id], workspace_role_id: BUILTIN_ROLES.workspaceEditor.id } }),
      200,
    );
    const claim = (id: string, headers: Record<string, string>) => call(`/api/v1/orgs/pending/${id}/claim`, { method: 'POST', headers });
    const pending = async () => ((await json(await asOther('/api/v1/orgs/current/members'), 200)).pending as Json[]).map((p) => p.id);
    const failures = () => recorded('update_org_member', 'Failure').length;
    const failuresBefore = failures();

    // Bad claims: no credential, malformed id, unknown id, someone else's invitation, a credential that is no user.
    expect((await claim(invite.id as string, {})).status).toBe(401);
    expect((await claim('not-a-uuid', asAda)).status).toBe(422);
    const unknown = await claim(randomUUID(), asAda);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: 'Invitation not found' });
    const wrongUser = await claim(invite.id as string, asBob);
    expect(wrongUser.status).toBe(404);
    expect(await wrongUser.json()).toEqual({ detail: 'Invitation not found' });
    const serviceKey = await claim(invite.id as string, { 'x-api-key': svc.apiKey });
    expect(serviceKey.status).toBe(403);
    // Nothing changed: still pending, Bob is no member of the other organization; each refused attempt one Failure
    // (422, 404, 404, 403; the unauthenticated 401 belongs to no organization and is not recorded).
    expect(await pending()).toEqual([invite.id]);
    expect((await call('/api/v1/workspaces', { headers: { ...asBob, 'x-organization-id': other.organization_id } })).status).toBe(403);
    expect(failures()).toBe(failuresBefore + 4);
    expect(recorded('update_org_member', 'Failure').at(-1)).toMatchObject({ organization_id: svc.organizationId, user_id: null, error: expect.stringContaining('Only a user') });

    // Ada sees it among her invitations (with the inviting organization); Bob sees none; a service key is no user.
    const mine = (await json(await call('/api/v1/orgs/pending', { headers: asAda }), 200)) as unknown as Json[];
    expect(mine).toEqual([
      {
        ...invite,
        organization_id: other.organization_id,
        organization_name: expect.stringMatching(/^inviting-/),
        expires_at: new Date(Date.parse(invite.created_at as string) + 7 * DAY).toISOString(),
      },
    ]);
    expect(await json(await call('/api/v1/orgs/pending', { headers: asBob }), 200)).toEqual([]);
    expect((await call('/api/v1/orgs/pending', { headers: { 'x-api-key': svc.apiKey } })).status).toBe(403);

    // Ada claims it: a session for the other organization, with the invitation's roles.
    const claimed = await json(await claim(invite.id as string, asAda), 200);
    expect(claimed).toMatchObject({ token_type: 'bearer', access_token: expect.any(String), expires_in: expect.any(Number) });
    const asAdaThere = { authorization: `Bearer ${claimed.access_token as string}` };
    expect(((await json(await call('/api/v1/workspaces', { headers: asAdaThere }), 200)) as unknown as Json[]).map((w) => w.id)).toEqual([other.workspace_id]);
    expect((await call('/api/v1/sessions', { method: 'POST', json: { name: `ada-${randomUUID()}` }, headers: { ...asAdaThere, 'x-tenant-id': other.workspace_id } })).status).toBe(200);
    const members = await json(await asOther('/api/v1/orgs/current/members'), 200);
    expect(members.pending).toEqual([]);
    expect((members.members as Json[]).find((m) => m.email === ada)).toMatchObject({ user_id: users[0].user_id, role_id: BUILTIN_ROLES.organizationUser.id });
    // Her membership here is unchanged.
    expect((await call('/api/v1/workspaces', { headers: asAda })).status).toBe(200);
    // Signing in again, she picks the organization; without one, the first she joined.
    const loginTo = (organization_id?: string) => call('/api/v1/auth/login', { method: 'POST', json: { email: ada, password: 'a long password', ...(organization_id ? { organization_id } : {}) } });
    const again = { authorization: `Bearer ${(await json(await loginTo(other.organization_id), 200)).access_token as string}` };
    expect(((await json(await call('/api/v1/workspaces', { headers: again }), 200)) as unknown as Json[]).map((w) => w.id)).toEqual([other.workspace_id]);
    const first = { authorization: `Bearer ${(await json(await loginTo(), 200)).access_token as string}` };
    expect(((await json(await call('/api/v1/workspaces', { headers: first }), 200)) as unknown as Json[]).map((w) => w.id)).toContain(svc.workspaceId);
    expect(await (await loginTo(randomUUID())).json()).toEqual({ detail: 'The user is not a member of that organization' });
    expect((await loginTo('not-an-org')).status).toBe(422);
    const [ok] = recorded('update_org_member', 'Success').filter((r) => r.organization_id === other.organization_id);
    expect(ok).toMatchObject({
      user_id: users[0].user_id,
      credential_type: 'session',
      workspace_id: null,
      resources: [{ type: 'user', id: users[0].user_id }, { type: 'pending_member', id: invite.id }],
      request: { method: 'POST', path: `/api/v1/orgs/pending/${invite.id as string}/claim` },
    });

    // Already claimed: the invitation is consumed.
    expect((await claim(invite.id as string, asAda)).status).toBe(404);
    expect(await json(await call('/api/v1/orgs/pending', { headers: asAda }), 200)).toEqual([]);

    // Declining: only the invited user may; the invitation is deleted, recorded in the inviting organization.
    const forBob = await json(await asOther('/api/v1/orgs/current/members', { method: 'POST', json: { email: bob } }), 200);
    expect((await call(`/api/v1/orgs/pending/${forBob.id as string}`, { method: 'DELETE', headers: asAda })).status).toBe(404);
    expect(await pending()).toEqual([forBob.id]);
    await json(await call(`/api/v1/orgs/pending/${forBob.id as string}`, { method: 'DELETE', headers: asBob }), 200);
    expect(await pending()).toEqual([]);
    expect((await claim(forBob.id as string, asBob)).status).toBe(404);
    expect(recorded('delete_org_pending_member').filter((r) => r.organization_id === other.organization_id)).toEqual([
      expect.objectContaining({ status: 'Success', user_id: users[1].user_id, resources: [{ type: 'pending_member', id: forBob.id }] }),
    ]);

    // Expired: an invitation older than 7 days can no longer be claimed and stays pending for the administrator to delete.
    const late = await json(await asOther('/api/v1/orgs/current/members', { method: 'POST', json: { email: cy } }), 200);
    const ds = (svc.app.get(IdentityService) as unknown as { ds: DataSource }).ds;
    await ds.query(`UPDATE "gateway"."org_invitations" SET "created_at" = now() - interval '8 days' WHERE "id" = $1`, [late.id]);
    const expired = await claim(late.id as string, asCy);
    expect(expired.status).toBe(400);
    expect(((await expired.json()) as { detail: string }).detail).toMatch(/^The invitation expired at /);
    expect(await pending()).toEqual([late.id]);
    expect(await json(await call('/api/v1/orgs/pending', { headers: asCy }), 200)).toEqual([]);
    expect((await call('/api/v1/workspaces', { headers: { ...asCy, 'x-organization-id': other.organization_id } })).status).toBe(403);
  });
});
