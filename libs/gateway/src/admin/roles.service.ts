import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { IsNull, type EntityManager } from 'typeorm';
import type { Identity, Permission, Role } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { badRequest, conflict, forbidden, notFound } from '@th/platform';
import { ApiKeyEntity, OrgInvitationEntity, OrgMemberEntity, RoleEntity, WorkspaceMemberEntity } from '../identity/identity.entities';
import { AdminStore } from './admin-store';

const toRole = (r: RoleEntity): Role => ({
  id: r.id,
  organization_id: r.organization_id,
  name: r.name,
  description: r.description,
  scope: r.scope,
  permissions: r.permissions,
  builtin: r.builtin,
});

/** Roles: the built-in ones and the organization's own. */
@Injectable()
export class RolesService {
  constructor(private readonly store: AdminStore) {}

  async listRoles(identity: Identity): Promise<Role[]> {
    assertPermissions(identity, ['organization:read']);
    const roles = await this.store.ds.getRepository(RoleEntity).find({
      where: [{ organization_id: IsNull() }, { organization_id: identity.organization_id }],
      order: { builtin: 'DESC', name: 'ASC' },
    });
    return roles.map(toRole);
  }

  async createRole(identity: Identity, body: { name: string; description?: string; scope: RoleEntity['scope']; permissions: Permission[] }): Promise<Role> {
    assertPermissions(identity, ['organization:manage']);
    checkRolePermissions(body.scope, body.permissions);
    return this.store.write(async (m) => {
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
    return this.store.write(async (m) => {
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
    await this.store.write(async (m) => {
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
}


function checkRolePermissions(scope: RoleEntity['scope'], permissions: readonly string[]): void {
  if (scope === 'workspace') {
    const orgPerms = permissions.filter((p) => p.startsWith('organization:'));
    if (orgPerms.length > 0) throw badRequest(`A workspace role cannot grant ${orgPerms.join(', ')}`);
  }
}