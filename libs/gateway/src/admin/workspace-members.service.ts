import { Injectable } from '@nestjs/common';
import type { Identity, WorkspaceMember } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { conflict, notFound } from '@th/platform';
import { OrgMemberEntity, WorkspaceMemberEntity } from '../identity/identity.entities';
import { BUILTIN_ROLES } from '../identity/roles';
import { AdminStore, workspaceOf } from './admin-store';

/** Members of the caller's workspace. */
@Injectable()
export class WorkspaceMembersService {
  constructor(private readonly store: AdminStore) {}

  async listWorkspaceMembers(identity: Identity): Promise<WorkspaceMember[]> {
    assertPermissions(identity, ['workspace:read']);
    const list = await this.store.ds.getRepository(WorkspaceMemberEntity).find({ where: { workspace_id: workspaceOf(identity) }, order: { created_at: 'ASC' } });
    return list.map(toWorkspaceMember);
  }

  async addWorkspaceMember(identity: Identity, body: { user_id: string; role_id?: string }): Promise<WorkspaceMember> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    return this.store.write(async (m) => {
      if ((await m.count(OrgMemberEntity, { where: { organization_id: identity.organization_id, user_id: body.user_id } })) === 0) {
        throw notFound('Organization member');
      }
      if ((await m.count(WorkspaceMemberEntity, { where: { workspace_id: wsId, user_id: body.user_id } })) > 0) throw conflict('The user is already a member of the workspace');
      const role = await this.store.role(m, identity.organization_id, body.role_id ?? BUILTIN_ROLES.workspaceViewer.id, 'workspace');
      const member = Object.assign(new WorkspaceMemberEntity(), { workspace_id: wsId, user_id: body.user_id, role_id: role.id, created_at: new Date() });
      await m.save(member);
      return toWorkspaceMember(member);
    });
  }

  async updateWorkspaceMember(identity: Identity, userId: string, body: { role_id: string }): Promise<WorkspaceMember> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    return this.store.write(async (m) => {
      const member = await m.findOne(WorkspaceMemberEntity, { where: { workspace_id: wsId, user_id: userId } });
      if (!member) throw notFound('Workspace member');
      member.role_id = (await this.store.role(m, identity.organization_id, body.role_id, 'workspace')).id;
      await m.save(member);
      return toWorkspaceMember(member);
    });
  }

  async deleteWorkspaceMember(identity: Identity, userId: string): Promise<void> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    await this.store.write(async (m) => {
      const res = await m.delete(WorkspaceMemberEntity, { workspace_id: wsId, user_id: userId });
      if (!res.affected) throw notFound('Workspace member');
    });
  }
}

const toWorkspaceMember = (x: WorkspaceMemberEntity): WorkspaceMember => ({
  user_id: x.user_id,
  workspace_id: x.workspace_id,
  role_id: x.role_id,
  created_at: x.created_at.toISOString(),
});