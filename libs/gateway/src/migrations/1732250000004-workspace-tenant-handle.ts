import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Workspaces get the published API's optional `tenant_handle`, unique in the installation. */
export class WorkspaceTenantHandle1732250000004 implements MigrationInterface {
  name = 'WorkspaceTenantHandle1732250000004';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "gateway"."workspaces" ADD COLUMN IF NOT EXISTS "tenant_handle" text`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "workspaces_tenant_handle" ON "gateway"."workspaces" ("tenant_handle") WHERE "tenant_handle" IS NOT NULL`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS "gateway"."workspaces_tenant_handle"`);
    await q.query(`ALTER TABLE "gateway"."workspaces" DROP COLUMN IF EXISTS "tenant_handle"`);
  }
}
