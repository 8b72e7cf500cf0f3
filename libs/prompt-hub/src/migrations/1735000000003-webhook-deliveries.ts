import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox of prompt webhook deliveries: staged in the transaction that stores the commit or tag, then claimed
 * (with a lease) and sent by any process's dispatcher, so a delivery survives a restart of the process.
 */
export class WebhookDeliveries1735000000003 implements MigrationInterface {
  name = 'WebhookDeliveries1735000000003';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."webhook_deliveries" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "webhook_id" uuid NOT NULL,
      "event" text NOT NULL,
      "body" text NOT NULL,
      "status" text NOT NULL DEFAULT 'pending',
      "attempts" integer NOT NULL DEFAULT 0,
      "next_attempt_at" timestamptz NOT NULL,
      "lease_until" timestamptz,
      "last_status_code" integer,
      "last_error" text,
      "created_at" timestamptz NOT NULL,
      "finished_at" timestamptz
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "webhook_deliveries_due" ON "prompt_hub"."webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending'`);
    await q.query(`CREATE INDEX IF NOT EXISTS "webhook_deliveries_tenant" ON "prompt_hub"."webhook_deliveries" ("tenant_id", "status")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "webhook_deliveries_finished" ON "prompt_hub"."webhook_deliveries" ("finished_at") WHERE "finished_at" IS NOT NULL`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."webhook_deliveries"`);
  }
}
