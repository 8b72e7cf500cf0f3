import { DataSource, type EntityManager } from 'typeorm';
import type { Identity } from '@th/contracts';
import { badRequest, forbidden, notFound } from '@th/platform';
import { RoleEntity, WorkspaceEntity } from '../identity/identity.entities';
import type { IdentityService } from '../identity/identity.service';

export interface AdminOptions {
  sessionSecret?: string;
  sessionTtlSeconds: number;
  /** Key material of workspace secret values at rest (WORKSPACE_SECRETS_KEY). */
  workspaceSecretsKey: string;
}

/** Workspace-level routes need the caller's workspace; organization routes work without one. */
export function workspaceOf(identity: Identity): string {
  if (!identity.tenant_id) throw forbidden('{"error":"org_scoped_key_requires_workspace"}');
  return identity.tenant_id;
}

/**
 * What the administration services share: the gateway's database, one transaction per write (after
 * which cached identities are dropped, so a revoked key or changed role applies at once) and the
 * organization-bounded lookups several resources make.
 */
export class AdminStore {
  constructor(
    readonly ds: DataSource,
    readonly identities: IdentityService,
  ) {}

  async write<T>(fn: (m: EntityManager) => Promise<T>): Promise<T> {
    const out = await this.ds.transaction(fn);
    this.identities.invalidate();
    return out;
  }

  /** A role this organization may use: built-in or its own. */
  async role(m: EntityManager, orgId: string, roleId: string, scope: RoleEntity['scope']): Promise<RoleEntity> {
    const role = await m.findOne(RoleEntity, { where: { id: roleId } });
    if (!role || (role.organization_id !== null && role.organization_id !== orgId)) throw notFound('Role');
    if (role.scope !== scope) throw badRequest(`Role ${role.name} is a ${role.scope} role; a ${scope} role is needed here`);
    return role;
  }

  /** A workspace of the caller's organization; other organizations' ids look unknown (404). */
  async orgWorkspace(m: EntityManager, identity: Identity, id: string): Promise<WorkspaceEntity> {
    const ws = await m.findOne(WorkspaceEntity, { where: { id } });
    if (!ws || ws.organization_id !== identity.organization_id) throw notFound('Workspace');
    return ws;
  }
}
