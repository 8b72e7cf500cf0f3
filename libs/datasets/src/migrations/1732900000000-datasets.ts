import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Datasets and their examples, versioned. Every change to a dataset's examples makes a new dataset version
 * (`dataset_versions`); each example row holds one state of an example, valid from the version that wrote it
 * up to (not including) the version that replaced or deleted it (`valid_to`, null while current).
 */
export class Datasets1732900000000 implements MigrationInterface {
  name = 'Datasets1732900000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."datasets" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "name" text NOT NULL,
      "description" text,
      "data_type" text NOT NULL DEFAULT 'kv',
      "inputs_schema_definition" jsonb,
      "outputs_schema_definition" jsonb,
      "externally_managed" boolean NOT NULL DEFAULT false,
      "created_by_upload" boolean NOT NULL DEFAULT false,
      "extra" jsonb,
      "share_token" uuid UNIQUE,
      "current_version" integer NOT NULL DEFAULT 0,
      "created_at" timestamptz NOT NULL,
      "modified_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "datasets_tenant_name" ON "datasets"."datasets" ("tenant_id", "name")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."dataset_versions" (
      "dataset_id" uuid NOT NULL REFERENCES "datasets"."datasets" ("id") ON DELETE CASCADE,
      "version" integer NOT NULL,
      "as_of" timestamptz NOT NULL,
      PRIMARY KEY ("dataset_id", "version")
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "dataset_versions_as_of" ON "datasets"."dataset_versions" ("dataset_id", "as_of")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."dataset_version_tags" (
      "dataset_id" uuid NOT NULL REFERENCES "datasets"."datasets" ("id") ON DELETE CASCADE,
      "tag" text NOT NULL,
      "version" integer NOT NULL,
      PRIMARY KEY ("dataset_id", "tag")
    )`);
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."examples" (
      "row_id" bigserial PRIMARY KEY,
      "id" uuid NOT NULL,
      "dataset_id" uuid NOT NULL REFERENCES "datasets"."datasets" ("id") ON DELETE CASCADE,
      "tenant_id" uuid NOT NULL,
      "valid_from" integer NOT NULL,
      "valid_to" integer,
      "inputs" jsonb NOT NULL,
      "outputs" jsonb,
      "metadata" jsonb,
      "splits" text[] NOT NULL DEFAULT '{base}',
      "source_run_id" uuid,
      "created_at" timestamptz NOT NULL,
      "modified_at" timestamptz NOT NULL
    )`);
    // One current state per example id (per workspace since ExamplesTenantKey1734000000001).
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "examples_current_id" ON "datasets"."examples" ("id") WHERE "valid_to" IS NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS "examples_dataset_current" ON "datasets"."examples" ("dataset_id", "created_at", "id") WHERE "valid_to" IS NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS "examples_dataset_versions" ON "datasets"."examples" ("dataset_id", "valid_from")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "examples_id" ON "datasets"."examples" ("id")`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "datasets"."examples"`);
    await q.query(`DROP TABLE IF EXISTS "datasets"."dataset_version_tags"`);
    await q.query(`DROP TABLE IF EXISTS "datasets"."dataset_versions"`);
    await q.query(`DROP TABLE IF EXISTS "datasets"."datasets"`);
  }
}
