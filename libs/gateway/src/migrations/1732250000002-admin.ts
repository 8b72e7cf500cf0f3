import type { MigrationInterface, QueryRunner } from 'typeorm';
import { BUILTIN_ROLES } from '../identity/roles';

/** Users, members, invitations, roles, workspace secrets, retention and usage limits. */
export class Admin1732250000002 implements MigrationInterface {
  name = 'Admin1732250000002';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "gateway"."organizations" ADD COLUMN IF NOT EXISTS "can_use_audit_logs" boolean`);
    await q.query(`ALTER TABLE "gateway"."workspaces" ADD COLUMN IF NOT EXISTS "shortlived_ttl_days" int`);
    await q.query(`ALTER TABLE "gateway"."workspaces" ADD COLUMN IF NOT EXISTS "longlived_ttl_days" int`);
    await q.query(`ALTER TABLE "gateway"."api_keys" ADD COLUMN IF NOT EXISTS "role_id" uuid`);
    await q.query(`CREATE INDEX IF NOT EXISTS "api_keys_workspace" ON "gateway"."api_keys" ("organization_id", "workspace_id")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."users" (
      "id" uuid PRIMARY KEY, "email" text NOT NULL UNIQUE, "full_name" text, "password_hash" text,
      "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."roles" (
      "id" uuid PRIMARY KEY, "organization_id" uuid REFERENCES "gateway"."organizations"("id") ON DELETE CASCADE,
      "name" text NOT NULL, "description" text, "scope" text NOT NULL, "permissions" text[] NOT NULL,
      "builtin" boolean NOT NULL DEFAULT false, "created_at" timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "roles_org_name" ON "gateway"."roles" (coalesce("organization_id", '00000000-0000-0000-0000-000000000000'::uuid), lower("name"))`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."org_members" (
      "organization_id" uuid NOT NULL REFERENCES "gateway"."organizations"("id") ON DELETE CASCADE,
      "user_id" uuid NOT NULL REFERENCES "gateway"."users"("id") ON DELETE CASCADE,
      "role_id" uuid NOT NULL REFERENCES "gateway"."roles"("id"),
      "created_at" timestamptz NOT NULL DEFAULT now(), PRIMARY KEY ("organization_id", "user_id"))`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."org_invitations" (
      "id" uuid PRIMARY KEY, "organization_id" uuid NOT NULL REFERENCES "gateway"."organizations"("id") ON DELETE CASCADE,
      "email" text NOT NULL, "role_id" uuid NOT NULL REFERENCES "gateway"."roles"("id"),
      "workspace_ids" uuid[] NOT NULL DEFAULT '{}', "workspace_role_id" uuid REFERENCES "gateway"."roles"("id"),
      "created_at" timestamptz NOT NULL DEFAULT now(), UNIQUE ("organization_id", "email"))`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."workspace_members" (
      "workspace_id" uuid NOT NULL REFERENCES "gateway"."workspaces"("id") ON DELETE CASCADE,
      "user_id" uuid NOT NULL REFERENCES "gateway"."users"("id") ON DELETE CASCADE,
      "role_id" uuid NOT NULL REFERENCES "gateway"."roles"("id"),
      "created_at" timestamptz NOT NULL DEFAULT now(), PRIMARY KEY ("workspace_id", "user_id"))`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."workspace_secrets" (
      "workspace_id" uuid NOT NULL REFERENCES "gateway"."workspaces"("id") ON DELETE CASCADE,
      "key" text NOT NULL, "value" text NOT NULL, "updated_at" timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY ("workspace_id", "key"))`);
    await q.query(`CREATE TABLE IF NOT EXISTS "gateway"."usage_limits" (
      "id" uuid PRIMARY KEY, "workspace_id" uuid NOT NULL REFERENCES "gateway"."workspaces"("id") ON DELETE CASCADE,
      "limit_type" text NOT NULL, "limit_value" bigint NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now(), "updated_at" timestamptz NOT NULL DEFAULT now(),
      UNIQUE ("workspace_id", "limit_type"))`);
    for (const r of Object.values(BUILTIN_ROLES)) {
      await q.query(
        `INSERT INTO "gateway"."roles" ("id", "organization_id", "name", "description", "scope", "permissions", "builtin")
         VALUES ($1, NULL, $2, $3, $4, $5, true)
         ON CONFLICT ("id") DO UPDATE SET "permissions" = EXCLUDED."permissions", "description" = EXCLUDED."description"`,
        [r.id, r.name, r.description, r.scope, r.permissions],
      );
    }
  }
  async down(q: QueryRunner): Promise<void> {
    for (const t of ['usage_limits', 'workspace_secrets', 'workspace_members', 'org_invitations', 'org_members', 'roles', 'users']) {
      await q.query(`DROP TABLE IF EXISTS "gateway"."${t}"`);
    }
    await q.query(`ALTER TABLE "gateway"."api_keys" DROP COLUMN IF EXISTS "role_id"`);
    await q.query(`ALTER TABLE "gateway"."workspaces" DROP COLUMN IF EXISTS "shortlived_ttl_days", DROP COLUMN IF EXISTS "longlived_ttl_days"`);
    await q.query(`ALTER TABLE "gateway"."organizations" DROP COLUMN IF EXISTS "can_use_audit_logs"`);
  }
}
