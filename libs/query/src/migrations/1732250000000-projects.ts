import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Projects1732250000000 implements MigrationInterface {
  name = 'Projects1732250000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "query"."projects" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "name" text NOT NULL,
      "description" text,
      "extra" jsonb,
      "start_time" timestamptz NOT NULL,
      "end_time" timestamptz,
      "reference_dataset_id" uuid,
      "default_dataset_id" uuid,
      "trace_tier" text,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "modified_at" timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "projects_tenant_name" ON "query"."projects" ("tenant_id", "name")`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "query"."projects"`);
  }
}
