import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Named run filters of a project, shared by its workspace (the runs view lists and applies them). */
export class SavedFilters1737100000000 implements MigrationInterface {
  name = 'SavedFilters1737100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "query"."saved_filters" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "session_id" uuid NOT NULL,
      "name" text NOT NULL,
      "filter" text NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "saved_filters_tenant_session_name" ON "query"."saved_filters" ("tenant_id", "session_id", "name")`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "query"."saved_filters"`);
  }
}
