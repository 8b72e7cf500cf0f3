import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A project's id is unique within its workspace, not across workspaces: a create with another workspace's
 * id then succeeds like one with a free id, so the answer tells nothing about other workspaces.
 */
export class ProjectsTenantKey1734000000000 implements MigrationInterface {
  name = 'ProjectsTenantKey1734000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "query"."projects" DROP CONSTRAINT IF EXISTS "projects_pkey"`);
    await q.query(`ALTER TABLE "query"."projects" ADD CONSTRAINT "projects_pkey" PRIMARY KEY ("tenant_id", "id")`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "query"."projects" DROP CONSTRAINT IF EXISTS "projects_pkey"`);
    await q.query(`ALTER TABLE "query"."projects" ADD CONSTRAINT "projects_pkey" PRIMARY KEY ("id")`);
  }
}
