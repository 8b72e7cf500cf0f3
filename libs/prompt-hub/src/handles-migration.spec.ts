import { randomUUID } from 'node:crypto';
import { openServiceDataSource } from '@th/database';
import { createTestDatabase } from '@th/testing';
import { PROMPT_HUB_MIGRATIONS } from './index';
import { PromptHubRepository } from './prompt-hub.repository';

/** Handles set through the hub before the workspace owned them move to their workspaces, against a real PostgreSQL. */
describe('HandlesFromWorkspaces migration', () => {
  it('moves hub handles to workspaces without one, keeps the workspace handle on a clash, and rebuilds the copy', async () => {
    const db = await createTestDatabase('th_hub_handles');
    const [a, b, c, d, e] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const before = await openServiceDataSource({ url: db.url, schema: 'prompt_hub', entities: [], migrations: PROMPT_HUB_MIGRATIONS.slice(0, -1), poolSize: 2 });
    try {
      // the gateway's table, only the columns the move reads; c's hub handle is d's workspace handle: not moved
      await before.query(`CREATE SCHEMA IF NOT EXISTS gateway`);
      await before.query(`CREATE TABLE gateway.workspaces (id uuid PRIMARY KEY, tenant_handle text)`);
      await before.query(`CREATE UNIQUE INDEX ON gateway.workspaces (tenant_handle) WHERE tenant_handle IS NOT NULL`);
      await before.query(`INSERT INTO gateway.workspaces (id, tenant_handle) VALUES ($1, NULL), ($2, 'b-own'), ($3, NULL), ($4, 'taken'), ($5, 'e-only')`, [a, b, c, d, e]);
      await before.query(`INSERT INTO prompt_hub.handles (tenant_id, handle, created_at) VALUES ($1, 'a-hub', now()), ($2, 'b-hub', now()), ($3, 'taken', now())`, [a, b, c]);
    } finally {
      await before.destroy();
    }
    const ds = await openServiceDataSource({ url: db.url, schema: 'prompt_hub', entities: [], migrations: PROMPT_HUB_MIGRATIONS, poolSize: 2 });
    try {
      const ws: { id: string; tenant_handle: string | null }[] = await ds.query(`SELECT id, tenant_handle FROM gateway.workspaces`);
      const owned = Object.fromEntries(ws.map((w) => [w.id, w.tenant_handle]));
      expect(owned).toEqual({ [a]: 'a-hub', [b]: 'b-own', [c]: null, [d]: 'taken', [e]: 'e-only' });
      const repo = new PromptHubRepository(ds);
      expect(await repo.handleOf(a)).toBe('a-hub');
      expect(await repo.handleOf(b)).toBe('b-own');
      expect(await repo.handleOf(c)).toBeNull();
      expect(await repo.tenantOfHandle('taken')).toBe(d);
      expect(await repo.tenantOfHandle('e-only')).toBe(e);
      expect(await repo.tenantOfHandle('b-hub')).toBeNull();
      // a workspace event moves a handle: the copy follows, one workspace per handle
      await repo.applyWorkspaceHandle(a, 'e-only');
      expect(await repo.tenantOfHandle('e-only')).toBe(a);
      expect(await repo.handleOf(e)).toBeNull();
      await repo.applyWorkspaceHandle(a, null);
      expect(await repo.handleOf(a)).toBeNull();
    } finally {
      await ds.destroy();
      await db.drop();
    }
  });
});
