import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Comparative (pairwise) experiments: a dataset's experiments compared side by side; deleted with the dataset. */
export class ComparativeExperiments1734100000000 implements MigrationInterface {
  name = 'ComparativeExperiments1734100000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "datasets"."comparative_experiments" (
      "tenant_id" uuid NOT NULL, "id" uuid NOT NULL, "name" text, "description" text,
      "reference_dataset_id" uuid NOT NULL, "experiment_ids" uuid[] NOT NULL, "extra" jsonb,
      "created_at" timestamptz NOT NULL, "modified_at" timestamptz NOT NULL,
      PRIMARY KEY ("tenant_id", "id"),
      FOREIGN KEY ("tenant_id", "reference_dataset_id") REFERENCES "datasets"."datasets" ("tenant_id", "id") ON DELETE CASCADE)`);
    await q.query(`CREATE INDEX IF NOT EXISTS "comparative_experiments_dataset" ON "datasets"."comparative_experiments" ("tenant_id", "reference_dataset_id", "created_at")`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "datasets"."comparative_experiments"`);
  }
}
