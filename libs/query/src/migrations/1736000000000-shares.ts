import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Public share tokens: a run's trace (v1 share_run, v2 runs.share) or a thread of a project. A token is read
 * without a key; it names its tenant and what it shares, nothing else.
 */
export class Shares1736000000000 implements MigrationInterface {
  name = 'Shares1736000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "query"."shares" (
      "token" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "session_id" uuid NOT NULL,
      "run_id" uuid,
      "trace_id" uuid,
      "thread_id" text,
      "created_at" timestamptz NOT NULL DEFAULT now(),
      CHECK (("run_id" IS NOT NULL AND "trace_id" IS NOT NULL AND "thread_id" IS NULL) OR ("run_id" IS NULL AND "trace_id" IS NULL AND "thread_id" IS NOT NULL))
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "shares_tenant_run" ON "query"."shares" ("tenant_id", "run_id") WHERE "run_id" IS NOT NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS "shares_tenant_trace" ON "query"."shares" ("tenant_id", "trace_id") WHERE "trace_id" IS NOT NULL`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "shares_tenant_thread" ON "query"."shares" ("tenant_id", "session_id", "thread_id") WHERE "thread_id" IS NOT NULL`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "query"."shares"`);
  }
}
