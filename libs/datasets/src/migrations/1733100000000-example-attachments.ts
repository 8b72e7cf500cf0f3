import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Example attachments. The bytes live in `attachment_blobs` (one row per uploaded file, never changed); each
 * example state names its attachments in `examples.attachments` ({name: {blob_id, mime_type}}), so attachments
 * are versioned with the example: an older version still shows the files it had. `signing_keys` holds the key
 * that signs the download URLs (made once per database, shared by every replica of the query service).
 */
export class ExampleAttachments1733100000000 implements MigrationInterface {
  name = 'ExampleAttachments1733100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "datasets"."examples" ADD COLUMN IF NOT EXISTS "attachments" jsonb`);
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."attachment_blobs" (
      "id" uuid PRIMARY KEY,
      "dataset_id" uuid NOT NULL REFERENCES "datasets"."datasets" ("id") ON DELETE CASCADE,
      "tenant_id" uuid NOT NULL,
      "mime_type" text NOT NULL,
      "data" bytea NOT NULL,
      "created_at" timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "attachment_blobs_dataset" ON "datasets"."attachment_blobs" ("dataset_id")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."signing_keys" ("purpose" text PRIMARY KEY, "key" text NOT NULL)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "datasets"."signing_keys"`);
    await q.query(`DROP TABLE IF EXISTS "datasets"."attachment_blobs"`);
    await q.query(`ALTER TABLE "datasets"."examples" DROP COLUMN IF EXISTS "attachments"`);
  }
}
