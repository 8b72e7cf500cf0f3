import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Identity1732250000001 implements MigrationInterface {
  name = 'Identity1732250000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."organizations" (
      "id" uuid PRIMARY KEY, "name" text NOT NULL, "plan" text NOT NULL DEFAULT 'free',
      "is_personal" boolean NOT NULL DEFAULT false, "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."workspaces" (
      "id" uuid PRIMARY KEY, "organization_id" uuid NOT NULL REFERENCES "gateway"."organizations"("id") ON DELETE CASCADE,
      "name" text NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."api_keys" (
      "id" uuid PRIMARY KEY, "organization_id" uuid NOT NULL REFERENCES "gateway"."organizations"("id") ON DELETE CASCADE,
      "workspace_id" uuid REFERENCES "gateway"."workspaces"("id") ON DELETE CASCADE, "user_id" uuid,
      "kind" text NOT NULL, "key_hash" text NOT NULL UNIQUE, "prefix" text NOT NULL, "description" text,
      "permissions" text[] NOT NULL DEFAULT '{}', "created_at" timestamptz NOT NULL DEFAULT now(),
      "expires_at" timestamptz, "revoked_at" timestamptz)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "gateway"."api_keys"`);
    await q.query(`DROP TABLE IF EXISTS "gateway"."workspaces"`);
    await q.query(`DROP TABLE IF EXISTS "gateway"."organizations"`);
  }
}
