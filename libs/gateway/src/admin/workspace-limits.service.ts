import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { Identity, TtlSettings, UsageLimit, UsageLimitType } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { notFound } from '@th/platform';
import { UsageLimitEntity, WorkspaceEntity } from '../identity/identity.entities';
import { AdminStore, workspaceOf } from './admin-store';

const toUsageLimit = (l: UsageLimitEntity): UsageLimit => ({
  id: l.id,
  workspace_id: l.workspace_id,
  limit_type: l.limit_type,
  limit_value: l.limit_value,
  created_at: l.created_at.toISOString(),
  updated_at: l.updated_at.toISOString(),
});

/** Retention settings and usage limits of the caller's workspace. */
@Injectable()
export class WorkspaceLimitsService {
  constructor(private readonly store: AdminStore) {}

  async getTtlSettings(identity: Identity): Promise<TtlSettings> {
    assertPermissions(identity, ['workspace:read']);
    const ws = await this.store.ds.getRepository(WorkspaceEntity).findOneOrFail({ where: { id: workspaceOf(identity) } });
    return { workspace_id: ws.id, shortlived_days: ws.shortlived_ttl_days, longlived_days: ws.longlived_ttl_days };
  }

  async updateTtlSettings(identity: Identity, body: { shortlived_days?: number | null; longlived_days?: number | null }): Promise<TtlSettings> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    await this.store.write(async (m) => {
      const patch: Partial<WorkspaceEntity> = {};
      if (body.shortlived_days !== undefined) patch.shortlived_ttl_days = body.shortlived_days;
      if (body.longlived_days !== undefined) patch.longlived_ttl_days = body.longlived_days;
      await m.update(WorkspaceEntity, { id: wsId }, patch);
    });
    return this.getTtlSettings(identity);
  }

  async listUsageLimits(identity: Identity): Promise<UsageLimit[]> {
    assertPermissions(identity, ['workspace:read']);
    const list = await this.store.ds.getRepository(UsageLimitEntity).find({ where: { workspace_id: workspaceOf(identity) }, order: { created_at: 'ASC' } });
    return list.map(toUsageLimit);
  }

  async upsertUsageLimit(identity: Identity, body: { limit_type: UsageLimitType; limit_value: number }): Promise<UsageLimit> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    return this.store.write(async (m) => {
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
    await this.store.write(async (m) => {
      const res = await m.delete(UsageLimitEntity, { id, workspace_id: workspaceOf(identity) });
      if (!res.affected) throw notFound('Usage limit');
    });
  }
}
