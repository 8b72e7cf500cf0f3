import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The audit store: one hash chain per organization. `events` is append-only: a trigger refuses
 * UPDATE, TRUNCATE and DELETE, except DELETE inside the retention job's transaction
 * (SET LOCAL audit.retention = 'on'). The trigger guards against mistakes; the hash chain is what
 * makes any change that bypasses it (a superuser disabling triggers) detectable.
 */
export class AuditLog1732250000060 implements MigrationInterface {
  name = 'AuditLog1732250000060';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "audit"."chains" (
      "chain_key" text PRIMARY KEY,
      "head_seq" bigint NOT NULL,
      "head_hash" text NOT NULL,
      "anchor_seq" bigint NOT NULL,
      "anchor_hash" text NOT NULL,
      "updated_at" timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE IF NOT EXISTS "audit"."events" (
      "chain_key" text NOT NULL,
      "seq" bigint NOT NULL,
      "id" text NOT NULL,
      "time" timestamptz NOT NULL,
      "operation" text NOT NULL,
      "status" text NOT NULL,
      "organization_id" text,
      "workspace_id" text,
      "record" text NOT NULL,
      "prev_hash" text NOT NULL,
      "hash" text NOT NULL,
      "stored_at" timestamptz NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY ("chain_key", "seq")
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "events_id" ON "audit"."events" ("id")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "events_org_time" ON "audit"."events" ("organization_id", "time", "id")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "events_chain_time" ON "audit"."events" ("chain_key", "time")`);
    await q.query(`CREATE OR REPLACE FUNCTION "audit"."refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('audit.retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit.events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
    await q.query(`DROP TRIGGER IF EXISTS "events_append_only" ON "audit"."events"`);
    await q.query(`CREATE TRIGGER "events_append_only" BEFORE UPDATE OR DELETE ON "audit"."events"
      FOR EACH ROW EXECUTE FUNCTION "audit"."refuse_change"()`);
    await q.query(`DROP TRIGGER IF EXISTS "events_no_truncate" ON "audit"."events"`);
    await q.query(`CREATE TRIGGER "events_no_truncate" BEFORE TRUNCATE ON "audit"."events"
      FOR EACH STATEMENT EXECUTE FUNCTION "audit"."refuse_change"()`);
    // Other roles of the database may read and insert, never change.
    await q.query(`REVOKE UPDATE, DELETE, TRUNCATE ON "audit"."events" FROM PUBLIC`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "audit"."events"`);
    await q.query(`DROP TABLE IF EXISTS "audit"."chains"`);
    await q.query(`DROP FUNCTION IF EXISTS "audit"."refuse_change"()`);
  }
}
