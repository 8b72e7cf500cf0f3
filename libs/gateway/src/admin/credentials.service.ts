import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IsNull } from 'typeorm';
import type { ApiKeyCreate, ApiKeyCreated, ApiKeyInfo, Identity } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { badRequest, forbidden, notFound } from '@th/platform';
import { ApiKeyEntity, RoleEntity, WorkspaceEntity } from '../identity/identity.entities';
import { generateApiKey, hashApiKey } from '../identity/identity.service';
import { BUILTIN_ROLES } from '../identity/roles';
import { AdminStore, workspaceOf } from './admin-store';

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

/** API keys, service keys and personal access tokens. */
@Injectable()
export class CredentialsService {
  constructor(private readonly store: AdminStore) {}

  async listKeys(identity: Identity, kind: CredentialKind): Promise<ApiKeyInfo[]> {
    const where =
      kind === 'personal_access_token'
        ? { kind, organization_id: identity.organization_id, user_id: this.userOf(identity), revoked_at: IsNull() }
        : kind === 'service_key'
          ? (assertPermissions(identity, ['organization:manage']), { kind, organization_id: identity.organization_id, revoked_at: IsNull() })
          : (assertPermissions(identity, ['workspace:manage']), { kind, organization_id: identity.organization_id, workspace_id: workspaceOf(identity), revoked_at: IsNull() });
    const keys = await this.store.ds.getRepository(ApiKeyEntity).find({ where, order: { created_at: 'ASC' } });
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
    return this.store.write(async (m) => {
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
    await this.store.write(async (m) => {
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
}
