import type { MigrationInterface, QueryRunner } from 'typeorm';

const D = '"datasets"';
/** The tables whose rows belong to a dataset. */
const CHILDREN = ['dataset_versions', 'dataset_version_tags', 'examples', 'attachment_blobs'];

/**
 * A dataset's id is unique within its workspace, not across workspaces: a create with another workspace's id
 * then succeeds like one with a free id, so the answer tells nothing about other workspaces. Every table that
 * hangs off a dataset refers to it by (tenant_id, dataset_id), and every query names both.
 */
export class DatasetsTenantKey1734000000002 implements MigrationInterface {
  name = 'DatasetsTenantKey1734000000002';
  async up(q: QueryRunner): Promise<void> {
    for (const t of ['dataset_versions', 'dataset_version_tags']) {
      await q.query(`ALTER TABLE ${D}."${t}" ADD COLUMN IF NOT EXISTS "tenant_id" uuid`);
      await q.query(`UPDATE ${D}."${t}" c SET tenant_id = d.tenant_id FROM ${D}."datasets" d WHERE d.id = c.dataset_id AND c.tenant_id IS NULL`);
      await q.query(`ALTER TABLE ${D}."${t}" ALTER COLUMN "tenant_id" SET NOT NULL`);
    }
    for (const t of CHILDREN) await q.query(`ALTER TABLE ${D}."${t}" DROP CONSTRAINT IF EXISTS "${t}_dataset_id_fkey"`);
    await q.query(`ALTER TABLE ${D}."datasets" DROP CONSTRAINT "datasets_pkey", ADD CONSTRAINT "datasets_pkey" PRIMARY KEY ("tenant_id", "id")`);
    await q.query(`ALTER TABLE ${D}."dataset_versions" DROP CONSTRAINT "dataset_versions_pkey", ADD CONSTRAINT "dataset_versions_pkey" PRIMARY KEY ("tenant_id", "dataset_id", "version")`);
    await q.query(`ALTER TABLE ${D}."dataset_version_tags" DROP CONSTRAINT "dataset_version_tags_pkey", ADD CONSTRAINT "dataset_version_tags_pkey" PRIMARY KEY ("tenant_id", "dataset_id", "tag")`);
    for (const t of CHILDREN) {
      await q.query(
        `ALTER TABLE ${D}."${t}" ADD CONSTRAINT "${t}_dataset_fkey" FOREIGN KEY ("tenant_id", "dataset_id") REFERENCES ${D}."datasets" ("tenant_id", "id") ON DELETE CASCADE`,
      );
    }
    await q.query(`DROP INDEX IF EXISTS ${D}."dataset_versions_as_of"`);
    await q.query(`CREATE INDEX "dataset_versions_as_of" ON ${D}."dataset_versions" ("tenant_id", "dataset_id", "as_of")`);
  }
  async down(q: QueryRunner): Promise<void> {
    for (const t of CHILDREN) await q.query(`ALTER TABLE ${D}."${t}" DROP CONSTRAINT IF EXISTS "${t}_dataset_fkey"`);
    await q.query(`ALTER TABLE ${D}."dataset_versions" DROP CONSTRAINT "dataset_versions_pkey", ADD CONSTRAINT "dataset_versions_pkey" PRIMARY KEY ("dataset_id", "version")`);
    await q.query(`ALTER TABLE ${D}."dataset_version_tags" DROP CONSTRAINT "dataset_version_tags_pkey", ADD CONSTRAINT "dataset_version_tags_pkey" PRIMARY KEY ("dataset_id", "tag")`);
    await q.query(`ALTER TABLE ${D}."datasets" DROP CONSTRAINT "datasets_pkey", ADD CONSTRAINT "datasets_pkey" PRIMARY KEY ("id")`);
    for (const t of CHILDREN) {
      await q.query(`ALTER TABLE ${D}."${t}" ADD CONSTRAINT "${t}_dataset_id_fkey" FOREIGN KEY ("dataset_id") REFERENCES ${D}."datasets" ("id") ON DELETE CASCADE`);
    }
    for (const t of ['dataset_versions', 'dataset_version_tags']) await q.query(`ALTER TABLE ${D}."${t}" DROP COLUMN "tenant_id"`);
    await q.query(`DROP INDEX IF EXISTS ${D}."dataset_versions_as_of"`);
    await q.query(`CREATE INDEX "dataset_versions_as_of" ON ${D}."dataset_versions" ("dataset_id", "as_of")`);
  }
}
