import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ControlPlane1732400000000 implements MigrationInterface {
  name = 'ControlPlane1732400000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "control_plane"."deployments" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "name" text NOT NULL,
      "source" text NOT NULL,
      "source_config" jsonb NOT NULL,
      "source_revision_config" jsonb NOT NULL,
      "secrets" jsonb NOT NULL,
      "secret_references" jsonb,
      "status" text NOT NULL,
      "latest_revision_id" uuid,
      "active_revision_id" uuid,
      "image_version" text,
      "runtime" jsonb NOT NULL DEFAULT '{}'::jsonb,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "deployments_tenant_name" ON "control_plane"."deployments" ("tenant_id", "name")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "deployments_status" ON "control_plane"."deployments" ("status")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "control_plane"."revisions" (
      "id" uuid PRIMARY KEY,
      "deployment_id" uuid NOT NULL REFERENCES "control_plane"."deployments"("id") ON DELETE CASCADE,
      "tenant_id" uuid NOT NULL,
      "seq" bigserial NOT NULL,
      "status" text NOT NULL,
      "status_message" text NOT NULL,
      "status_history" jsonb NOT NULL,
      "source_revision_config" jsonb NOT NULL,
      "resource_spec" jsonb,
      "build" jsonb NOT NULL,
      "secrets" jsonb NOT NULL,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "revisions_deployment" ON "control_plane"."revisions" ("deployment_id", "seq")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "revisions_unfinished" ON "control_plane"."revisions" ("status") WHERE "status" IN ('QUEUED','BUILDING','DEPLOYING')`);
    await q.query(`CREATE TABLE IF NOT EXISTS "control_plane"."listeners" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "name" text NOT NULL,
      "compute_type" text NOT NULL,
      "k8s_namespaces" jsonb NOT NULL,
      "created_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "listeners_tenant_name" ON "control_plane"."listeners" ("tenant_id", "name")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "control_plane"."integrations" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL UNIQUE,
      "kind" text NOT NULL,
      "webhook_secret" jsonb NOT NULL,
      "created_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE TABLE IF NOT EXISTS "control_plane"."uploads" (
      "object_path" text PRIMARY KEY,
      "deployment_id" uuid NOT NULL REFERENCES "control_plane"."deployments"("id") ON DELETE CASCADE,
      "tenant_id" uuid NOT NULL,
      "expires_at" timestamptz NOT NULL,
      "data" bytea,
      "uploaded_at" timestamptz,
      "created_at" timestamptz NOT NULL
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "control_plane"."uploads"`);
    await q.query(`DROP TABLE IF EXISTS "control_plane"."integrations"`);
    await q.query(`DROP TABLE IF EXISTS "control_plane"."listeners"`);
    await q.query(`DROP TABLE IF EXISTS "control_plane"."revisions"`);
    await q.query(`DROP TABLE IF EXISTS "control_plane"."deployments"`);
  }
}
