import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An example's id is unique within its workspace, not across workspaces: a create with another workspace's
 * id then succeeds like one with a free id, so the answer tells nothing about other workspaces. (Every read
 * of an example is bound to its workspace or to its dataset, which belongs to one workspace.)
 */
export class ExamplesTenantKey1734000000001 implements MigrationInterface {
  name = 'ExamplesTenantKey1734000000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS "datasets"."examples_current_id"`);
    await q.query(`CREATE UNIQUE INDEX "examples_current_id" ON "datasets"."examples" ("tenant_id", "id") WHERE "valid_to" IS NULL`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS "datasets"."examples_current_id"`);
    await q.query(`CREATE UNIQUE INDEX "examples_current_id" ON "datasets"."examples" ("id") WHERE "valid_to" IS NULL`);
  }
}
