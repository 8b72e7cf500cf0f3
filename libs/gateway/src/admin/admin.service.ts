import { Injectable, type OnModuleInit } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, In, IsNull, type EntityManager } from 'typeorm';
import type {
  SessionCreate,
  SessionInfo,
  ApiKeyCreate,
  ApiKeyCreated,
  ApiKeyInfo,
  Identity,
  LoginResponse,
  OrgMember,
  OrgMembers,
  Organization,
  PendingInvitation,
  PendingMember,
  Permission,
  Role,
  TtlSettings,
  UsageLimit,
  UsageLimitType,
  Workspace,
  WorkspaceMember,
  WorkspaceSecretKey,
} from '@th/contracts';
import { assertPermissions, signSessionToken, verifySessionToken } from '@th/auth';
import { SecretCipher, badRequest, conflict, forbidden, notFound, unauthorized } from '@th/platform';
import {
  ApiKeyEntity,
  OrganizationEntity,
  OrgInvitationEntity,
  OrgMemberEntity,
  RoleEntity,
  UsageLimitEntity,
  UserEntity,
  WorkspaceEntity,
  WorkspaceMemberEntity,
  WorkspaceSecretEntity,
} from '../identity/identity.entities';
import { IdentityService, generateApiKey, hashApiKey, hashPassword, verifyPassword } from '../identity/identity.service';
import { BUILTIN_ROLES } from '../identity/roles';

export interface AdminOptions {
  sessionSecret?: string;
  sessionTtlSeconds: number;
  /** Key material of workspace secret values at rest (WORKSPACE_SECRETS_KEY). */
  workspaceSecretsKey: string;
}
export const ADMIN_OPTIONS = Symbol('ADMIN_OPTIONS');

/** Days an invitation can be claimed after it was sent (then the administrator invites again). */
export const INVITATION_TTL_DAYS = 7;

type CredentialKind = ApiKeyEntity['kind'];

const toKeyInfo = (k: ApiKeyEntity): ApiKeyInfo => ({
  id: k.id,
  kind: k.kind,
  short_key: k.prefix,
  description: k.description,
  organization_id: k.organization_id,
  workspace_id: k.workspace_id,
  user_id: k.user_id,
  role_id: k.role_id,
  permissions: k.permissions,
  created_at: k.created_at.toISOString(),
  expires_at: k.expires_at ? k.expires_at.toISOString() : null,
});
const toWorkspace = (w: WorkspaceEntity): Workspace => ({ id: w.id, organization_id: w.organization_id, name: w.name, created_at: w.created_at.toISOString() });
const toRole = (r: RoleEntity): Role => ({
  id: r.id,
  organization_id: r.organization_id,
  name: r.name,
  description: r.description,
  scope: r.scope,
  permissions: r.permissions,
  builtin: r.builtin,
});
const toPending = (i: OrgInvitationEntity): PendingMember => ({
  id: i.id,
  email: i.email,
  role_id: i.role_id,
  workspace_ids: i.workspace_ids,
  workspace_role_id: i.workspace_role_id,
  created_at: i.created_at.toISOString(),
});
const toUsageLimit = (l: UsageLimitEntity): UsageLimit => ({
  id: l.id,
  workspace_id: l.workspace_id,
  limit_type: l.limit_type,
  limit_value: l.limit_value,
  created_at: l.created_at.toISOString(),
  updated_at: l.updated_at.toISOString(),
});

/** Workspace-level routes need the caller's workspace; organization routes work without one. */
function workspaceOf(identity: Identity): string {
  if (!identity.tenant_id) throw forbidden('{"error":"org_scoped_key_requires_workspace"}');
  return identity.tenant_id;
}

/**
 * The administration the audit log tracks: credentials, workspaces, members and invitations,
 * roles, workspace secrets, retention settings and usage limits. Every write is one transaction.
 */
@Injectable()
export class AdminService implements OnModuleInit {
  private readonly secretsCipher: SecretCipher;

  constructor(
    private readonly ds: DataSource,
    private readonly identities: IdentityService,
    private readonly opts: AdminOptions,
  ) {
    this.secretsCipher = new SecretCipher(opts.workspaceSecretsKey);
  }

  async onModuleInit(): Promise<void> {
    await this.sealPlaintextSecrets();
  }

  private async write<T>(fn: (m: EntityManager) => Promise<T>): Promise<T> {
    const out = await this.ds.transaction(fn);
    this.identities.invalidate();
    return out;
  }

  // --- roles -------------------------------------------------------------------------------------

  /** A role this organization may use: built-in or its own. */
  private async role(m: EntityManager, orgId: string, roleId: string, scope: RoleEntity['scope']): Promise<RoleEntity> {
    const role = await m.findOne(RoleEntity, { where: { id: roleId } });
    if (!role || (role.organization_id !== null && role.organization_id !== orgId)) throw notFound('Role');
    if (role.scope !== scope) throw badRequest(`Role ${role.name} is a ${role.scope} role; a ${scope} role is needed here`);
    return role;
  }

  async listRoles(identity: Identity): Promise<Role[]> {
    assertPermissions(identity, ['organization:read']);
    const roles = await this.ds.getRepository(RoleEntity).find({
      where: [{ organization_id: IsNull() }, { organization_id: identity.organization_id }],
      order: { builtin: 'DESC', name: 'ASC' },
    });
    return roles.map(toRole);
  }

  async createRole(identity: Identity, body: { name: string; description?: string; scope: RoleEntity['scope']; permissions: Permission[] }): Promise<Role> {
    assertPermissions(identity, ['organization:manage']);
    checkRolePermissions(body.scope, body.permissions);
    return this.write(async (m) => {
      await this.assertRoleNameFree(m, identity.organization_id, body.name);
      const role = Object.assign(new RoleEntity(), {
        id: randomUUID(),
        organization_id: identity.organization_id,
        name: body.name,
        description: body.description ?? null,
        scope: body.scope,
        permissions: [...new Set(body.permissions)],
        builtin: false,
        created_at: new Date(),
      });
      await m.save(role);
      return toRole(role);
    });
  }

  async updateRole(identity: Identity, id: string, body: { name?: string; description?: string; permissions?: Permission[] }): Promise<Role> {
    assertPermissions(identity, ['organization:manage']);
    return this.write(async (m) => {
      const role = await m.findOne(RoleEntity, { where: { id } });
      if (!role || (role.organization_id !== null && role.organization_id !== identity.organization_id)) throw notFound('Role');
      if (role.builtin) throw forbidden('Built-in roles cannot be changed');
      if (body.name !== undefined && body.name.toLowerCase() !== role.name.toLowerCase()) await this.assertRoleNameFree(m, identity.organization_id, body.name);
      if (body.permissions) checkRolePermissions(role.scope, body.permissions);
      Object.assign(role, {
        ...(body.name !== undefined ? { name: body.name } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.permissions ? { permissions: [...new Set(body.permissions)] } : {}),
      });
      await m.save(role);
      // Keys created with this role carry its permissions.
      if (body.permissions) await m.update(ApiKeyEntity, { role_id: role.id, organization_id: identity.organization_id }, { permissions: role.permissions });
      return toRole(role);
    });
  }

  async deleteRole(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.write(async (m) => {
      const role = await m.findOne(RoleEntity, { where: { id } });
      if (!role || (role.organization_id !== null && role.organization_id !== identity.organization_id)) throw notFound('Role');
      if (role.builtin) throw forbidden('Built-in roles cannot be deleted');
      const inUse =
        (await m.count(OrgMemberEntity, { where: { role_id: id } })) +
        (await m.count(WorkspaceMemberEntity, { where: { role_id: id } })) +
        (await m.count(ApiKeyEntity, { where: { role_id: id, revoked_at: IsNull() } })) +
        (await m.count(OrgInvitationEntity, { where: [{ role_id: id }, { workspace_role_id: id }] }));
      if (inUse > 0) throw conflict('The role is still assigned to members, invitations or keys');
      await m.delete(RoleEntity, { id });
    });
  }

  private async assertRoleNameFree(m: EntityManager, orgId: string, name: string): Promise<void> {
    const taken = await m
      .createQueryBuilder(RoleEntity, 'r')
      .where('(r.organization_id = :org OR r.organization_id IS NULL) AND lower(r.name) = lower(:name)', { org: orgId, name })
      .getCount();
    if (taken > 0) throw conflict(`A role named ${name} already exists`);
  }

  // --- credentials -------------------------------------------------------------------------------

  async listKeys(identity: Identity, kind: CredentialKind): Promise<ApiKeyInfo[]> {
    const where =
      kind === 'personal_access_token'
        ? { kind, organization_id: identity.organization_id, user_id: this.userOf(identity), revoked_at: IsNull() }
        : kind === 'service_key'
          ? (assertPermissions(identity, ['organization:manage']), { kind, organization_id: identity.organization_id, revoked_at: IsNull() })
          : (assertPermissions(identity, ['workspace:manage']), { kind, organization_id: identity.organization_id, workspace_id: workspaceOf(identity), revoked_at: IsNull() });
    const keys = await this.ds.getRepository(ApiKeyEntity).find({ where, order: { created_at: 'ASC' } });
    return keys.map(toKeyInfo);
  }

  async createKey(identity: Identity, kind: CredentialKind, body: ApiKeyCreate): Promise<ApiKeyCreated> {
    if (body.expires_at && new Date(body.expires_at).getTime() <= Date.now()) throw badRequest('expires_at must be in the future');
    let workspaceId: string | null;
    let userId: string | null = null;
    if (kind === 'personal_access_token') {
      userId = this.userOf(identity);
      if (body.role_id !== undefined || body.workspace_id !== undefined) throw badRequest('A personal access token acts with its user\'s roles: role_id and workspace_id are not accepted');
      workspaceId = null;
    } else if (kind === 'service_key') {
      assertPermissions(identity, ['organization:manage']);
      workspaceId = body.workspace_id ?? null;
    } else {
      assertPermissions(identity, ['workspace:manage']);
      if (body.workspace_id !== undefined && body.workspace_id !== identity.tenant_id) throw badRequest('An API key belongs to the calling workspace; use a service key for another one');
      workspaceId = workspaceOf(identity);
    }
    const value = generateApiKey();
    return this.write(async (m) => {
      if (workspaceId) {
        const ws = await m.findOne(WorkspaceEntity, { where: { id: workspaceId } });
        if (!ws || ws.organization_id !== identity.organization_id) throw notFound('Workspace');
      }
      let role: RoleEntity | null = null;
      if (kind !== 'personal_access_token') {
        const defaultRole = workspaceId ? BUILTIN_ROLES.workspaceAdmin.id : BUILTIN_ROLES.organizationAdmin.id;
        const roleId = body.role_id ?? defaultRole;
        role = await m.findOne(RoleEntity, { where: { id: roleId } });
        if (!role || (role.organization_id !== null && role.organization_id !== identity.organization_id)) throw notFound('Role');
        if (kind === 'api_key' && role.scope !== 'workspace') throw badRequest('An API key carries a workspace role');
        // A key never carries more than its creator may do.
        const beyond = role.permissions.filter((p) => !identity.permissions.includes(p));
        if (beyond.length > 0) throw forbidden(`The role grants permissions the caller lacks: ${beyond.join(', ')}`);
      }
      const key = Object.assign(new ApiKeyEntity(), {
        id: randomUUID(),
        organization_id: identity.organization_id,
        workspace_id: workspaceId,
        user_id: userId,
        kind,
        key_hash: hashApiKey(value),
        prefix: value.slice(0, 8),
        description: body.description ?? null,
        role_id: role?.id ?? null,
        permissions: role?.permissions ?? [],
        created_at: new Date(),
        expires_at: body.expires_at ? new Date(body.expires_at) : null,
        revoked_at: null,
      });
      await m.save(key);
      return { ...toKeyInfo(key), key: value };
    });
  }

  /** Revokes a key; it stops working at once in this process (other gateway replicas within seconds). */
  async deleteKey(identity: Identity, kind: CredentialKind, id: string): Promise<void> {
    if (kind === 'service_key') assertPermissions(identity, ['organization:manage']);
    if (kind === 'api_key') assertPermissions(identity, ['workspace:manage']);
    await this.write(async (m) => {
      const key = await m.findOne(ApiKeyEntity, { where: { id, kind, revoked_at: IsNull() } });
      const visible =
        key &&
        key.organization_id === identity.organization_id &&
        (kind === 'personal_access_token' ? key.user_id === this.userOf(identity) : kind === 'api_key' ? key.workspace_id === workspaceOf(identity) : true);
      if (!key || !visible) throw notFound('API key');
      await m.update(ApiKeyEntity, { id }, { revoked_at: new Date() });
    });
  }

  private userOf(identity: Identity): string {
    if (!identity.user_id) throw forbidden('Personal access tokens belong to a user: call with a user session or a personal access token');
    return identity.user_id;
  }

  // --- sessions ----------------------------------------------------------------------------------

  async login(body: { email: string; password: string; organization_id?: string }): Promise<LoginResponse> {
    if (!this.opts.sessionSecret) throw unauthorized('Sessions are not enabled (no SESSION_SECRET)');
    const user = await this.ds.getRepository(UserEntity).findOne({ where: { email: body.email.toLowerCase() } });
    if (!user?.password_hash || !(await verifyPassword(body.password, user.password_hash))) throw unauthorized('Invalid email or password');
    // A user of several organizations (e.g. after claiming an invitation) names the one the session acts in.
    const member = await this.ds.getRepository(OrgMemberEntity).findOne({
      where: { user_id: user.id, ...(body.organization_id ? { organization_id: body.organization_id.toLowerCase() } : {}) },
      order: { created_at: 'ASC' },
    });
    if (!member) throw unauthorized(body.organization_id ? 'The user is not a member of that organization' : 'The user is not a member of any organization');
    const token = await signSessionToken({ user_id: user.id, organization_id: member.organization_id }, this.opts.sessionSecret, this.opts.sessionTtlSeconds);
    return { access_token: token, token_type: 'bearer', expires_in: this.opts.sessionTtlSeconds };
  }

  /**
   * A session for the web app's cookie: from an API key (acting as that key), a one-time sign-in token
   * (the key it was issued for) or a user's email and password (acting as the user, in the first
   * workspace the user belongs to). The token is the cookie's value; `info` is what the app is told.
   */
  async createSession(body: SessionCreate): Promise<{ token: string; info: SessionInfo }> {
    const secret = this.opts.sessionSecret;
    if (!secret) throw unauthorized('Sessions are not enabled (no SESSION_SECRET)');
    if ('email' in body) {
      const { access_token } = await this.login(body);
      const claims = await verifySessionToken(access_token, secret);
      if (!claims) throw unauthorized('Invalid email or password');
      const tenant = await this.defaultWorkspace(claims.user_id, claims.organization_id);
      const token = await signSessionToken({ ...claims, ...(tenant ? { tenant_id: tenant } : {}) }, secret, this.opts.sessionTtlSeconds);
      return { token, info: { organization_id: claims.organization_id, tenant_id: tenant, user_id: claims.user_id, credential_type: 'session' } };
    }
    let key;
    if ('api_key' in body) key = await this.identities.keyForSession({ raw: body.api_key });
    else {
      const hash = this.identities.consumeSignInToken(body.sign_in_token);
      if (!hash) throw unauthorized('This sign-in link was used already or has expired');
      key = await this.identities.keyForSession({ hash });
    }
    const token = await signSessionToken(
      { user_id: key.user_id ?? key.id, organization_id: key.organization_id, credential_id: key.id },
      secret,
      this.opts.sessionTtlSeconds,
    );
    return { token, info: { organization_id: key.organization_id, tenant_id: key.workspace_id ?? '', user_id: key.user_id, credential_type: key.kind } };
  }

  /** The first workspace of the organization the user joined, else the organization's first (for its admins); '' when none. */
  private async defaultWorkspace(userId: string, orgId: string): Promise<string> {
    const memberships = await this.ds.getRepository(WorkspaceMemberEntity).find({ where: { user_id: userId }, order: { created_at: 'ASC' } });
    const inOrg = memberships.length
      ? new Set((await this.ds.getRepository(WorkspaceEntity).find({ where: { id: In(memberships.map((m) => m.workspace_id)), organization_id: orgId } })).map((w) => w.id))
      : new Set<string>();
    const joined = memberships.find((m) => inOrg.has(m.workspace_id));
    if (joined) return joined.workspace_id;
    const first = await this.ds.getRepository(WorkspaceEntity).findOne({ where: { organization_id: orgId }, order: { created_at: 'ASC' } });
    return first?.id ?? '';
  }

  get sessionTtlSeconds(): number {
    return this.opts.sessionTtlSeconds;
  }

  // --- the organization --------------------------------------------------------------------------

  async getOrganization(identity: Identity): Promise<Organization> {
    assertPermissions(identity, ['organization:read']);
    const org = await this.ds.getRepository(OrganizationEntity).findOneOrFail({ where: { id: identity.organization_id } });
    return this.toOrganization(org);
  }

  async updateOrganization(identity: Identity, body: { name?: string; can_use_audit_logs?: boolean | null }): Promise<Organization> {
    assertPermissions(identity, ['organization:manage']);
    const org = await this.write(async (m) => {
      const o = await m.findOneOrFail(OrganizationEntity, { where: { id: identity.organization_id } });
      if (body.name !== undefined) o.name = body.name;
      if (body.can_use_audit_logs !== undefined) o.can_use_audit_logs = body.can_use_audit_logs;
      return m.save(o);
    });
    return this.toOrganization(org);
  }

  private toOrganization(o: OrganizationEntity): Organization {
    return {
      id: o.id,
      name: o.name,
      plan: o.plan,
      is_personal: o.is_personal,
      can_use_audit_logs: o.can_use_audit_logs,
      audit_logs_enabled: this.identities.canUseAuditLogs(o),
      created_at: o.created_at.toISOString(),
    };
  }

  // --- workspaces --------------------------------------------------------------------------------

  async listWorkspaces(identity: Identity): Promise<Workspace[]> {
    assertPermissions(identity, ['organization:read']);
    const list = await this.ds.getRepository(WorkspaceEntity).find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    return list.map(toWorkspace);
  }

  async createWorkspace(identity: Identity, body: { name: string }): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    return this.write(async (m) => {
      const ws = Object.assign(new WorkspaceEntity(), {
        id: randomUUID(),
        organization_id: identity.organization_id,
        name: body.name,
        shortlived_ttl_days: null,
        longlived_ttl_days: null,
        created_at: new Date(),
      });
      await m.save(ws);
      // The creating user administers the new workspace.
      if (identity.user_id) {
        await m.save(Object.assign(new WorkspaceMemberEntity(), { workspace_id: ws.id, user_id: identity.user_id, role_id: BUILTIN_ROLES.workspaceAdmin.id, created_at: new Date() }));
      }
      return toWorkspace(ws);
    });
  }

  async updateWorkspace(identity: Identity, id: string, body: { name: string }): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    return this.write(async (m) => {
      const ws = await this.orgWorkspace(m, identity, id);
      ws.name = body.name;
      await m.save(ws);
      return toWorkspace(ws);
    });
  }

  /** Deletes the workspace with its keys, members, secrets and limits (its runs expire with ClickHouse retention). */
  async deleteWorkspace(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.write(async (m) => {
      await this.orgWorkspace(m, identity, id);
      const count = await m.count(WorkspaceEntity, { where: { organization_id: identity.organization_id } });
      if (count <= 1) throw conflict('An organization keeps at least one workspace');
      await m.delete(WorkspaceEntity, { id });
    });
  }

  private async orgWorkspace(m: EntityManager, identity: Identity, id: string): Promise<WorkspaceEntity> {
    const ws = await m.findOne(WorkspaceEntity, { where: { id } });
    if (!ws || ws.organization_id !== identity.organization_id) throw notFound('Workspace');
    return ws;
  }

  // --- organization members ----------------------------------------------------------------------

  async listOrgMembers(identity: Identity): Promise<OrgMembers> {
    assertPermissions(identity, ['organization:read']);
    const members = await this.ds
      .getRepository(OrgMemberEntity)
      .find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    const users = members.length ? await this.ds.getRepository(UserEntity).find({ where: { id: In(members.map((x) => x.user_id)) } }) : [];
    const byId = new Map(users.map((u) => [u.id, u]));
    const pending = await this.ds.getRepository(OrgInvitationEntity).find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    return {
      members: members.map((x): OrgMember => ({
        user_id: x.user_id,
        email: byId.get(x.user_id)?.email ?? '',
        full_name: byId.get(x.user_id)?.full_name ?? null,
        role_id: x.role_id,
        created_at: x.created_at.toISOString(),
      })),
      pending: pending.map(toPending),
    };
  }

  async inviteToOrg(identity: Identity, body: { email: string; role_id?: string; workspace_ids?: string[]; workspace_role_id?: string }): Promise<PendingMember> {
    assertPermissions(identity, ['organization:manage']);
    const email = body.email.toLowerCase();
    return this.write(async (m) => {
      const role = await this.role(m, identity.organization_id, body.role_id ?? BUILTIN_ROLES.organizationUser.id, 'organization');
      const wsRole = body.workspace_role_id ? await this.role(m, identity.organization_id, body.workspace_role_id, 'workspace') : null;
      for (const wsId of body.workspace_ids ?? []) await this.orgWorkspace(m, identity, wsId);
      const user = await m.findOne(UserEntity, { where: { email } });
      if (user && (await m.count(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: user.id } })) > 0) {
        throw conflict(`${email} is already a member of the organization`);
      }
      if ((await m.count(OrgInvitationEntity, { where: { organization_id: identity.organization_id, email } })) > 0) throw conflict(`${email} is already invited`);
      const invite = Object.assign(new OrgInvitationEntity(), {
        id: randomUUID(),
        organization_id: identity.organization_id,
        email,
        role_id: role.id,
        workspace_ids: [...new Set(body.workspace_ids ?? [])],
        workspace_role_id: wsRole?.id ?? null,
        created_at: new Date(),
      });
      await m.save(invite);
      return toPending(invite);
    });
  }

  /**
   * Creates users who sign in with a password (POST /auth/login) as members of the organization.
   * A pending invitation for the same email is consumed: its roles and workspaces apply.
   */
  async addBasicAuthUsers(identity: Identity, body: { users: { email: string; full_name?: string; password: string; role_id?: string }[] }): Promise<OrgMember[]> {
    assertPermissions(identity, ['organization:manage']);
    const emails = body.users.map((u) => u.email.toLowerCase());
    if (new Set(emails).size !== emails.length) throw badRequest('Each email may appear once');
    const hashes = await Promise.all(body.users.map((u) => hashPassword(u.password)));
    return this.write(async (m) => {
      const out: OrgMember[] = [];
      for (const [i, u] of body.users.entries()) {
        const email = emails[i];
        if ((await m.count(UserEntity, { where: { email } })) > 0) throw conflict(`A user with email ${email} already exists`);
        const invite = await m.findOne(OrgInvitationEntity, { where: { organization_id: identity.organization_id, email } });
        const role = await this.role(m, identity.organization_id, u.role_id ?? invite?.role_id ?? BUILTIN_ROLES.organizationUser.id, 'organization');
        const now = new Date();
        const user = Object.assign(new UserEntity(), { id: randomUUID(), email, full_name: u.full_name ?? null, password_hash: hashes[i], created_at: now });
        await m.save(user);
        await m.save(Object.assign(new OrgMemberEntity(), { organization_id: identity.organization_id, user_id: user.id, role_id: role.id, created_at: now }));
        if (invite) {
          for (const wsId of invite.workspace_ids) {
            await m.save(
              Object.assign(new WorkspaceMemberEntity(), { workspace_id: wsId, user_id: user.id, role_id: invite.workspace_role_id ?? BUILTIN_ROLES.workspaceViewer.id, created_at: now }),
            );
          }
          await m.delete(OrgInvitationEntity, { id: invite.id });
        }
        out.push({ user_id: user.id, email, full_name: user.full_name, role_id: role.id, created_at: now.toISOString() });
      }
      return out;
    });
  }

  async updateOrgMember(identity: Identity, userId: string, body: { role_id: string }): Promise<OrgMember> {
    assertPermissions(identity, ['organization:manage']);
    return this.write(async (m) => {
      const member = await m.findOne(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: userId } });
      if (!member) throw notFound('Organization member');
      const role = await this.role(m, identity.organization_id, body.role_id, 'organization');
      member.role_id = role.id;
      await m.save(member);
      const user = await m.findOneOrFail(UserEntity, { where: { id: userId } });
      return { user_id: userId, email: user.email, full_name: user.full_name, role_id: role.id, created_at: member.created_at.toISOString() };
    });
  }

  /** Removes the member, their workspace memberships in this organization and their tokens here. */
  async deleteOrgMember(identity: Identity, userId: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.write(async (m) => {
      const member = await m.findOne(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: userId } });
      if (!member) throw notFound('Organization member');
      const workspaces = await m.find(WorkspaceEntity, { where: { organization_id: identity.organization_id } });
      if (workspaces.length) await m.delete(WorkspaceMemberEntity, { user_id: userId, workspace_id: In(workspaces.map((w) => w.id)) });
      await m.update(ApiKeyEntity, { organization_id: identity.organization_id, user_id: userId, revoked_at: IsNull() }, { revoked_at: new Date() });
      await m.delete(OrgMemberEntity, { organization_id: identity.organization_id, user_id: userId });
    });
  }

  /** The calling user's invitation by id: unknown ids and invitations for other users look alike (404). */
  private async invitationFor(m: EntityManager, identity: Identity, id: string, lock: boolean): Promise<{ invite: OrgInvitationEntity; user: UserEntity }> {
    if (!identity.user_id) throw forbidden('Only a user can answer an invitation: sign in (POST /api/v1/auth/login) or use a personal access token');
    // Locked, so two concurrent answers to one invitation cannot both succeed.
    const invite = await m.findOne(OrgInvitationEntity, { where: { id }, ...(lock ? { lock: { mode: 'pessimistic_write' as const } } : {}) });
    const user = await m.findOne(UserEntity, { where: { id: identity.user_id } });
    if (!invite || !user || invite.email !== user.email.toLowerCase()) throw notFound('Invitation');
    return { invite, user };
  }

  /** Invitations addressed to the calling user's email that can still be claimed, oldest first. */
  async listMyInvitations(identity: Identity): Promise<PendingInvitation[]> {
    if (!identity.user_id) throw forbidden('Only a user has invitations: sign in (POST /api/v1/auth/login) or use a personal access token');
    const user = await this.ds.getRepository(UserEntity).findOne({ where: { id: identity.user_id } });
    if (!user) return [];
    const notBefore = new Date(Date.now() - INVITATION_TTL_DAYS * 86_400_000);
    const invites = (await this.ds.getRepository(OrgInvitationEntity).find({ where: { email: user.email.toLowerCase() }, order: { created_at: 'ASC' } })).filter(
      (i) => i.created_at > notBefore,
    );
    const orgs = invites.length ? await this.ds.getRepository(OrganizationEntity).find({ where: { id: In([...new Set(invites.map((i) => i.organization_id))]) } }) : [];
    const names = new Map(orgs.map((o) => [o.id, o.name]));
    return invites.map((i) => ({
      ...toPending(i),
      organization_id: i.organization_id,
      organization_name: names.get(i.organization_id) ?? '',
      expires_at: new Date(i.created_at.getTime() + INVITATION_TTL_DAYS * 86_400_000).toISOString(),
    }));
  }

  /** The invited user declines: the invitation is deleted. Returns the inviting organization. */
  async declineInvitation(identity: Identity, id: string): Promise<{ organization_id: string }> {
    return this.write(async (m) => {
      const { invite } = await this.invitationFor(m, identity, id, true);
      await m.delete(OrgInvitationEntity, { id: invite.id });
      return { organization_id: invite.organization_id };
    });
  }

  /**
   * The invited user accepts an invitation: they become a member of the inviting organization with the
   * invitation's role (and of its workspaces, those that still exist, with its workspace role), the
   * invitation is consumed, and a session for that organization is returned. Only the user whose email
   * the invitation names may claim it; any other caller, an unknown id and an already-claimed (consumed)
   * invitation all get the same 404, so invitation ids cannot be probed.
   */
  async claimInvitation(identity: Identity, id: string): Promise<{ session: LoginResponse; member: OrgMember; organization_id: string }> {
    if (!identity.user_id) throw forbidden('Only a user can answer an invitation: sign in (POST /api/v1/auth/login) or use a personal access token');
    const secret = this.opts.sessionSecret;
    if (!secret) throw badRequest('Sessions are not enabled (no SESSION_SECRET): a claimed invitation is used through a session');
    const userId = identity.user_id;
    const out = await this.write(async (m) => {
      const { invite, user } = await this.invitationFor(m, identity, id, true);
      const expires = invite.created_at.getTime() + INVITATION_TTL_DAYS * 86_400_000;
      if (expires <= Date.now()) throw badRequest(`The invitation expired at ${new Date(expires).toISOString()}; ask an administrator to invite you again`);
      if ((await m.count(OrgMemberEntity, { where: { organization_id: invite.organization_id, user_id: userId } })) > 0) {
        throw conflict('You are already a member of this organization');
      }
      const now = new Date();
      await m.save(Object.assign(new OrgMemberEntity(), { organization_id: invite.organization_id, user_id: userId, role_id: invite.role_id, created_at: now }));
      const workspaces = invite.workspace_ids.length ? await m.find(WorkspaceEntity, { where: { id: In(invite.workspace_ids), organization_id: invite.organization_id } }) : [];
      for (const ws of workspaces) {
        await m.save(
          Object.assign(new WorkspaceMemberEntity(), { workspace_id: ws.id, user_id: userId, role_id: invite.workspace_role_id ?? BUILTIN_ROLES.workspaceViewer.id, created_at: now }),
        );
      }
      await m.delete(OrgInvitationEntity, { id: invite.id });
      const member: OrgMember = { user_id: userId, email: user.email, full_name: user.full_name, role_id: invite.role_id, created_at: now.toISOString() };
      return { member, organization_id: invite.organization_id };
    });
    const token = await signSessionToken({ user_id: userId, organization_id: out.organization_id }, secret, this.opts.sessionTtlSeconds);
    return { ...out, session: { access_token: token, token_type: 'bearer', expires_in: this.opts.sessionTtlSeconds } };
  }

  async deletePendingMember(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.write(async (m) => {
      const res = await m.delete(OrgInvitationEntity, { id, organization_id: identity.organization_id });
      if (!res.affected) throw notFound('Pending member');
    });
  }

  // --- workspace members -------------------------------------------------------------------------

  async listWorkspaceMembers(identity: Identity): Promise<WorkspaceMember[]> {
    assertPermissions(identity, ['workspace:read']);
    const list = await this.ds.getRepository(WorkspaceMemberEntity).find({ where: { workspace_id: workspaceOf(identity) }, order: { created_at: 'ASC' } });
    return list.map(toWorkspaceMember);
  }

  async addWorkspaceMember(identity: Identity, body: { user_id: string; role_id?: string }): Promise<WorkspaceMember> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    return this.write(async (m) => {
      if ((await m.count(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: body.user_id } })) === 0) {
        throw notFound('Organization member');
      }
      if ((await m.count(WorkspaceMemberEntity, { where: { workspace_id: wsId, user_id: body.user_id } })) > 0) throw conflict('The user is already a member of the workspace');
      const role = await this.role(m, identity.organization_id, body.role_id ?? BUILTIN_ROLES.workspaceViewer.id, 'workspace');
      const member = Object.assign(new WorkspaceMemberEntity(), { workspace_id: wsId, user_id: body.user_id, role_id: role.id, created_at: new Date() });
      await m.save(member);
      return toWorkspaceMember(member);
    });
  }

  async updateWorkspaceMember(identity: Identity, userId: string, body: { role_id: string }): Promise<WorkspaceMember> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    return this.write(async (m) => {
      const member = await m.findOne(WorkspaceMemberEntity, { where: { workspace_id: wsId, user_id: userId } });
      if (!member) throw notFound('Workspace member');
      member.role_id = (await this.role(m, identity.organization_id, body.role_id, 'workspace')).id;
      await m.save(member);
      return toWorkspaceMember(member);
    });
  }

  async deleteWorkspaceMember(identity: Identity, userId: string): Promise<void> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    await this.write(async (m) => {
      const res = await m.delete(WorkspaceMemberEntity, { workspace_id: wsId, user_id: userId });
      if (!res.affected) throw notFound('Workspace member');
    });
  }

  // --- workspace secrets ------------------------------------------------------------------------

  async listSecrets(identity: Identity): Promise<WorkspaceSecretKey[]> {
    assertPermissions(identity, ['workspace:manage']);
    const list = await this.ds.getRepository(WorkspaceSecretEntity).find({ where: { workspace_id: workspaceOf(identity) }, order: { key: 'ASC' } });
    return list.map((s) => ({ key: s.key, updated_at: s.updated_at.toISOString() }));
  }

  async updateSecrets(identity: Identity, body: { key: string; value: string | null }[]): Promise<WorkspaceSecretKey[]> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    const keys = body.map((s) => s.key);
    if (new Set(keys).size !== keys.length) throw badRequest('Each secret key may appear once');
    await this.write(async (m) => {
      const now = new Date();
      for (const s of body) {
        if (s.value === null) await m.delete(WorkspaceSecretEntity, { workspace_id: wsId, key: s.key });
        else await m.save(Object.assign(new WorkspaceSecretEntity(), { workspace_id: wsId, key: s.key, value: this.secretsCipher.sealText(s.value), sealed: true, updated_at: now }));
      }
    });
    // Keys and times only: a value is never read back.
    return this.listSecrets(identity);
  }

  /**
   * Seals the values stored in plain text before sealing existed; returns how many. Replicas starting
   * together share the work (SKIP LOCKED), each row sealed once.
   */
  async sealPlaintextSecrets(): Promise<number> {
    return this.ds.transaction(async (m) => {
      const rows = (await m.query(
        `SELECT "workspace_id", "key", "value" FROM "gateway"."workspace_secrets" WHERE NOT "sealed" FOR UPDATE SKIP LOCKED`,
      )) as { workspace_id: string; key: string; value: string }[];
      for (const r of rows) {
        await m.update(WorkspaceSecretEntity, { workspace_id: r.workspace_id, key: r.key }, { value: this.secretsCipher.sealText(r.value), sealed: true });
      }
      return rows.length;
    });
  }

  // --- retention and usage limits ----------------------------------------------------------------

  async getTtlSettings(identity: Identity): Promise<TtlSettings> {
    assertPermissions(identity, ['workspace:read']);
    const ws = await this.ds.getRepository(WorkspaceEntity).findOneOrFail({ where: { id: workspaceOf(identity) } });
    return { workspace_id: ws.id, shortlived_days: ws.shortlived_ttl_days, longlived_days: ws.longlived_ttl_days };
  }

  async updateTtlSettings(identity: Identity, body: { shortlived_days?: number | null; longlived_days?: number | null }): Promise<TtlSettings> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    await this.write(async (m) => {
      const patch: Partial<WorkspaceEntity> = {};
      if (body.shortlived_days !== undefined) patch.shortlived_ttl_days = body.shortlived_days;
      if (body.longlived_days !== undefined) patch.longlived_ttl_days = body.longlived_days;
      await m.update(WorkspaceEntity, { id: wsId }, patch);
    });
    return this.getTtlSettings(identity);
  }

  async listUsageLimits(identity: Identity): Promise<UsageLimit[]> {
    assertPermissions(identity, ['workspace:read']);
    const list = await this.ds.getRepository(UsageLimitEntity).find({ where: { workspace_id: workspaceOf(identity) }, order: { created_at: 'ASC' } });
    return list.map(toUsageLimit);
  }

  async upsertUsageLimit(identity: Identity, body: { limit_type: UsageLimitType; limit_value: number }): Promise<UsageLimit> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    return this.write(async (m) => {
      const now = new Date();
      const existing = await m.findOne(UsageLimitEntity, { where: { workspace_id: wsId, limit_type: body.limit_type } });
      const limit = existing ?? Object.assign(new UsageLimitEntity(), { id: randomUUID(), workspace_id: wsId, limit_type: body.limit_type, created_at: now });
      limit.limit_value = body.limit_value;
      limit.updated_at = now;
      await m.save(limit);
      return toUsageLimit(limit);
    });
  }

  async deleteUsageLimit(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['workspace:manage']);
    await this.write(async (m) => {
      const res = await m.delete(UsageLimitEntity, { id, workspace_id: workspaceOf(identity) });
      if (!res.affected) throw notFound('Usage limit');
    });
  }
}

const toWorkspaceMember = (x: WorkspaceMemberEntity): WorkspaceMember => ({
  user_id: x.user_id,
  workspace_id: x.workspace_id,
  role_id: x.role_id,
  created_at: x.created_at.toISOString(),
});

function checkRolePermissions(scope: RoleEntity['scope'], permissions: readonly string[]): void {
  if (scope === 'workspace') {
    const orgPerms = permissions.filter((p) => p.startsWith('organization:'));
    if (orgPerms.length > 0) throw badRequest(`A workspace role cannot grant ${orgPerms.join(', ')}`);
  }
}
