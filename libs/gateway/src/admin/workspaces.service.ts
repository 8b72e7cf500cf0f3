import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Identity, Workspace } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { conflict } from '@th/platform';
import { WorkspaceEntity, WorkspaceMemberEntity } from '../identity/identity.entities';
import { BUILTIN_ROLES } from '../identity/roles';
import { AdminStore } from './admin-store';

const toWorkspace = (w: WorkspaceEntity): Workspace => ({ id: w.id, organization_id: w.organization_id, name: w.name, created_at: w.created_at.toISOString() });

/** Workspaces of the caller's organization. */
@Injectable()
export class WorkspacesService {
  constructor(private readonly store: AdminStore) {}

  async listWorkspaces(identity: Identity): Promise<Workspace[]> {
    assertPermissions(identity, ['organization:read']);
    const list = await this.store.ds.getRepository(WorkspaceEntity).find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    return list.map(toWorkspace);
  }

  async createWorkspace(identity: Identity, body: { name: string }): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    return this.store.write(async (m) => {
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
    return this.store.write(async (m) => {
      const ws = await this.store.orgWorkspace(m, identity, id);
      ws.name = body.name;
      await m.save(ws);
      return toWorkspace(ws);
    });
  }

  /** Deletes the workspace with its keys, members, secrets and limits (its runs expire with ClickHouse retention). */
  async deleteWorkspace(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    await this.store.write(async (m) => {
      await this.store.orgWorkspace(m, identity, id);
      const count = await m.count(WorkspaceEntity, { where: { organization_id: identity.organization_id } });
      if (count <= 1) throw conflict('An organization keeps at least one workspace');
      await m.delete(WorkspaceEntity, { id });
    });
  }
}
