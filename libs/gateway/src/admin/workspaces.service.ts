import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { TOPICS, type HubSettings, type Identity, type Workspace, type WorkspaceCreate, type WorkspaceUpdate } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import type { EventBus } from '@th/bus';
import { conflict, notFound } from '@th/platform';
import { workspaceOf } from './admin-store';
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
  constructor(
    private readonly store: AdminStore,
    /** Where workspace changes are published (`workspaces`); absent in the identity unit tests. */
    private readonly bus: EventBus | null = null,
  ) {}

  /** The hub's view of the calling workspace: its tenant handle (null until set). */
  async hubSettings(identity: Identity): Promise<HubSettings> {
    const ws = await this.store.ds.getRepository(WorkspaceEntity).findOne({ where: { id: workspaceOf(identity) } });
    if (!ws) throw notFound('Workspace');
    return { id: ws.id, display_name: ws.name, tenant_handle: ws.tenant_handle, created_at: ws.created_at.toISOString() };
  }

  /** Sets the calling workspace's handle, once (POST /settings/handle); PATCH /workspaces/{id} can change it later. */
  async setTenantHandle(identity: Identity, handle: string): Promise<HubSettings> {
    const id = workspaceOf(identity);
    const ws = await this.store.write(async (m) => {
      const ws = await m.findOne(WorkspaceEntity, { where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!ws) throw notFound('Workspace');
      if (ws.tenant_handle !== null) throw conflict('This workspace already has a tenant handle; it can be set once here (an organization admin can change it with PATCH /workspaces/{id})');
      await assertHandleFree(m, handle);
      ws.tenant_handle = handle;
      await m.save(ws);
      return ws;
    });
    await this.published(ws, false);
    return { id: ws.id, display_name: ws.name, tenant_handle: ws.tenant_handle, created_at: ws.created_at.toISOString() };
  }

  /** Tells the services that keep a copy of a workspace's handle (the prompt hub), after the write committed. */
  private async published(ws: WorkspaceEntity, deleted: boolean): Promise<void> {
    await this.bus?.publish(TOPICS.workspaces, [
      { key: ws.id, value: { workspace_id: ws.id, organization_id: ws.organization_id, tenant_handle: deleted ? null : ws.tenant_handle, deleted } },
    ]);
  }

  async listWorkspaces(identity: Identity): Promise<Workspace[]> {
    assertPermissions(identity, ['organization:read']);
    const list = await this.store.ds.getRepository(WorkspaceEntity).find({ where: { organization_id: identity.organization_id }, order: { created_at: 'ASC' } });
    return list.map(toWorkspace);
  }

  async createWorkspace(identity: Identity, body: WorkspaceCreate): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    const created = await this.store.write(async (m) => {
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
      return ws;
    });
    await this.published(created, false);
    return toWorkspace(created);
  }

  async updateWorkspace(identity: Identity, id: string, body: WorkspaceUpdate): Promise<Workspace> {
    assertPermissions(identity, ['organization:manage']);
    const updated = await this.store.write(async (m) => {
      const ws = await this.store.orgWorkspace(m, identity, id);
      if (body.display_name !== undefined) ws.name = body.display_name;
      if (body.tenant_handle !== undefined) {
        if (body.tenant_handle !== null && body.tenant_handle !== ws.tenant_handle) await assertHandleFree(m, body.tenant_handle);
        ws.tenant_handle = body.tenant_handle;
      }
      await m.save(ws);
      return ws;
    });
    await this.published(updated, false);
    return toWorkspace(updated);
  }

  /** Deletes the workspace with its keys, members, secrets and limits (its runs expire with ClickHouse retention). */
  async deleteWorkspace(identity: Identity, id: string): Promise<void> {
    assertPermissions(identity, ['organization:manage']);
    const deleted = await this.store.write(async (m) => {
      const ws = await this.store.orgWorkspace(m, identity, id);
      const count = await m.count(WorkspaceEntity, { where: { organization_id: identity.organization_id } });
      if (count <= 1) throw conflict('An organization keeps at least one workspace');
      await m.delete(WorkspaceEntity, { id });
      return ws;
    });
    await this.published(deleted, true);
  }
}

/** Handles are global (like the published service's); a taken one is a 409 whichever organization holds it. */
async function assertHandleFree(m: EntityManager, handle: string): Promise<void> {
  if ((await m.count(WorkspaceEntity, { where: { tenant_handle: handle } })) > 0) throw conflict(`The tenant handle ${handle} is taken`);
}
