import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The workspace owns its tenant handle (gateway.workspaces.tenant_handle); `prompt_hub.handles` becomes the hub's
 * copy of it, kept from the gateway's `workspaces` events. Handles set through the hub before are moved to their
 * workspaces (a workspace that already has a handle keeps it; a handle another workspace holds is not moved), then
 * the copy is rebuilt from the workspaces. The one step that reads the gateway's schema, once.
 */
export class HandlesFromWorkspaces1735000000004 implements MigrationInterface {
  name = 'HandlesFromWorkspaces1735000000004';
  async up(q: QueryRunner): Promise<void> {
    const [gateway]: { present: boolean }[] = await q.query(
      `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'gateway' AND table_name = 'workspaces' AND column_name = 'tenant_handle') AS present`,
    );
    if (!gateway?.present) {
      // A new installation whose gateway has not migrated yet: the hub has no handles of its own to move.
      const [held]: { n: number }[] = await q.query(`SELECT count(*)::int AS n FROM "prompt_hub"."handles"`);
      if ((held?.n ?? 0) > 0) throw new Error('prompt_hub.handles holds handles to move, but gateway.workspaces.tenant_handle does not exist: migrate the gateway first');
      return;
    }
    await q.query(`UPDATE "gateway"."workspaces" w SET "tenant_handle" = h."handle"
      FROM "prompt_hub"."handles" h
      WHERE w."id" = h."tenant_id" AND w."tenant_handle" IS NULL
        AND NOT EXISTS (SELECT 1 FROM "gateway"."workspaces" o WHERE o."tenant_handle" = h."handle")`);
    await q.query(`DELETE FROM "prompt_hub"."handles"`);
    await q.query(`INSERT INTO "prompt_hub"."handles" ("tenant_id", "handle", "created_at")
      SELECT "id", "tenant_handle", now() FROM "gateway"."workspaces" WHERE "tenant_handle" IS NOT NULL`);
  }
  async down(): Promise<void> {
    // The handles stay with the workspaces; the copy is still valid for the older hub.
  }
}
