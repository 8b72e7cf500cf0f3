import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { Identity, Workspace, WorkspaceCreate, WorkspaceUpdate } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { conflict } from '@th/platform';
import { WorkspaceEntity, WorkspaceMemberEntity } from '../identity/identity.entities';
import { BUILTIN_ROLES } from '../identity/roles';
import { AdminStore } from './admin-store';

const toWorkspace = (w: WorkspaceEntity): Workspace => ({
  id: w.id,
  organization_id: w.organization_id,
  display_name: w.name,
  name: w.name,
  tenant_handle: w.tenant_handle,
  created_at: w.created_at.toISOString(),
});

/** Workspaces of the caller's organization. */
@Injectable()
export class WorkspacesService {
  constructor(private readonly store: AdminStore) {}

  async listWorkspaces(identity: Identity): Promise<Workspace[]> {
    assertPermissions(identity, ['organization:read']);
    const list = await this.store.ds.getRepository(WorkspaceEntity).find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    return list.map(toWorkspace);
  }

  async createWorkspace(identity: Identity, body: WorkspaceCreate): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    return this.store.write(async (m) => {
      if (body.tenant_handle !== null) await assertHandleFree(m, body.tenant_handle);
      const ws = Object.assign(new WorkspaceEntity(), {
        id: randomUUID(),
        organization_id: identity.organization_id,
        name: body.display_name,
        tenant_handle: body.tenant_handle,
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

  async updateWorkspace(identity: Identity, id: string, body: WorkspaceUpdate): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    return this.store.write(async (m) => {
      const ws = await this.store.orgWorkspace(m, identity, id);
      if (body.display_name !== undefined) ws.name = body.display_name;
      if (body.tenant_handle !== undefined) {
        if (body.tenant_handle !== null && body.tenant_handle !== ws.tenant_handle) await assertHandleFree(m, body.tenant_handle);
        ws.tenant_handle = body.tenant_handle;
      }
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

/** Handles are global (like the published service's); a taken one is a 409 whichever organization holds it. */
async function assertHandleFree(m: EntityManager, handle: string): Promise<void> {
  if ((await m.count(WorkspaceEntity, { where: { tenant_handle: handle } })) > 0) throw conflict(`The tenant handle ${handle} is taken`);
}
