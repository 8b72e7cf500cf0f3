import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Destinations, export jobs (one-time, scheduled and spawned) and the files each job has finished. */
export class Exports1732260000000 implements MigrationInterface {
  name = 'Exports1732260000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "exports"."destinations" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "destination_type" text NOT NULL,
      "display_name" text NOT NULL,
      "bucket_name" text NOT NULL,
      "prefix" text NOT NULL,
      "region" text,
      "endpoint_url" text,
      "credentials_enc" text NOT NULL,
      "credentials_keys" jsonb NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "destinations_tenant" ON "exports"."destinations" ("tenant_id", "created_at")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "exports"."jobs" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "organization_id" uuid NOT NULL,
      "destination_id" uuid NOT NULL REFERENCES "exports"."destinations"("id"),
      "session_id" uuid NOT NULL,
      "start_time" text NOT NULL,
      "end_time" text,
      "start_us" bigint NOT NULL,
      "end_us" bigint,
      "interval_hours" integer,
      "filter" text,
      "export_fields" jsonb,
      "format_version" text NOT NULL,
      "status" text NOT NULL,
      "source_bulk_export_id" uuid REFERENCES "exports"."jobs"("id"),
      "window_index" integer,
      "next_window" integer NOT NULL DEFAULT 0,
      "identity" jsonb NOT NULL,
      "run_after" timestamptz NOT NULL DEFAULT now(),
      "rows_written" bigint NOT NULL DEFAULT 0,
      "files_written" integer NOT NULL DEFAULT 0,
      "cursor_us" bigint,
      "cursor_id" uuid,
      "lease_owner" text,
      "lease_until" timestamptz,
      "attempts" integer NOT NULL DEFAULT 0,
      "error" text,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      "updated_at" timestamptz NOT NULL DEFAULT now(),
      "started_at" timestamptz,
      "finished_at" timestamptz
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "jobs_tenant" ON "exports"."jobs" ("tenant_id", "created_at")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "jobs_due" ON "exports"."jobs" ("status", "run_after")`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "jobs_window" ON "exports"."jobs" ("source_bulk_export_id", "window_index")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "exports"."files" (
      "export_id" uuid NOT NULL REFERENCES "exports"."jobs"("id"),
      "seq" integer NOT NULL,
      "key" text NOT NULL,
      "rows" integer NOT NULL,
      "bytes" bigint NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY ("export_id", "seq")
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "exports"."files"`);
    await q.query(`DROP TABLE IF EXISTS "exports"."jobs"`);
    await q.query(`DROP TABLE IF EXISTS "exports"."destinations"`);
  }
}
