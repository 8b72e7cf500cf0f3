import { randomUUID } from 'node:crypto';
import { openServiceDataSource } from '@th/database';
import { createTestDatabase } from '@th/testing';
import { DATASETS_ENTITIES, DATASETS_MIGRATIONS } from '../index';
import { Datasets1732900000000 } from './1732900000000-datasets';
import { ExampleAttachments1733100000000 } from './1733100000000-example-attachments';

/** An installation upgraded with data in it: the per-workspace keys keep every row and fill tenant_id in. */
describe('datasets: per-workspace ids on an existing database', () => {
  it('backfills tenant_id, keeps the rows, and then lets another workspace use the same dataset and example ids', async () => {
    const db = await createTestDatabase('th_ds_keys');
    try {
      const [tenant, other, dataset, example] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      const before = await openServiceDataSource({ url: db.url, schema: 'datasets', entities: DATASETS_ENTITIES, migrations: [Datasets1732900000000, ExampleAttachments1733100000000] });
      await before.query(`INSERT INTO datasets.datasets (id, tenant_id, name, current_version, created_at, modified_at) VALUES ($1, $2, 'd', 1, now(), now())`, [dataset, tenant]);
      await before.query(`INSERT INTO datasets.dataset_versions (dataset_id, version, as_of) VALUES ($1, 0, now()), ($1, 1, now() + interval '1 second')`, [dataset]);
      await before.query(`INSERT INTO datasets.dataset_version_tags (dataset_id, tag, version) VALUES ($1, 'prod', 1)`, [dataset]);
      await before.query(`INSERT INTO datasets.examples (id, dataset_id, tenant_id, valid_from, inputs, created_at, modified_at) VALUES ($1, $2, $3, 1, '{}', now(), now())`, [example, dataset, tenant]);
      await before.query(`INSERT INTO datasets.attachment_blobs (id, dataset_id, tenant_id, mime_type, data) VALUES ($1, $2, $3, 'text/plain', 'x')`, [randomUUID(), dataset, tenant]);
      await before.destroy();

      const after = await openServiceDataSource({ url: db.url, schema: 'datasets', entities: DATASETS_ENTITIES, migrations: DATASETS_MIGRATIONS });
      try {
        expect(await after.query(`SELECT tenant_id, count(*)::int AS n FROM datasets.dataset_versions GROUP BY tenant_id`)).toEqual([{ tenant_id: tenant, n: 2 }]);
        expect(await after.query(`SELECT tenant_id, tag FROM datasets.dataset_version_tags`)).toEqual([{ tenant_id: tenant, tag: 'prod' }]);
        await after.query(`INSERT INTO datasets.datasets (id, tenant_id, name, current_version, created_at, modified_at) VALUES ($1, $2, 'd', 0, now(), now())`, [dataset, other]);
        await after.query(`INSERT INTO datasets.dataset_versions (tenant_id, dataset_id, version, as_of) VALUES ($1, $2, 0, now())`, [other, dataset]);
        await after.query(`INSERT INTO datasets.examples (id, dataset_id, tenant_id, valid_from, inputs, created_at, modified_at) VALUES ($1, $2, $3, 0, '{}', now(), now())`, [example, dataset, other]);
        // The same id twice in one workspace is still refused, and a child row needs its dataset in its own workspace.
        await expect(after.query(`INSERT INTO datasets.datasets (id, tenant_id, name, current_version, created_at, modified_at) VALUES ($1, $2, 'e', 0, now(), now())`, [dataset, tenant])).rejects.toMatchObject({ code: '23505' });
        await expect(after.query(`INSERT INTO datasets.examples (id, dataset_id, tenant_id, valid_from, inputs, created_at, modified_at) VALUES ($1, $2, $3, 0, '{}', now(), now())`, [randomUUID(), dataset, randomUUID()])).rejects.toMatchObject({ code: '23503' });
        // Deleting one workspace's dataset takes its own rows only.
        await after.query(`DELETE FROM datasets.datasets WHERE tenant_id = $1 AND id = $2`, [tenant, dataset]);
        expect(await after.query(`SELECT tenant_id FROM datasets.examples`)).toEqual([{ tenant_id: other }]);
        expect(await after.query(`SELECT count(*)::int AS n FROM datasets.attachment_blobs`)).toEqual([{ n: 0 }]);
        expect(await after.query(`SELECT tenant_id FROM datasets.dataset_versions`)).toEqual([{ tenant_id: other }]);
      } finally {
        await after.destroy();
      }
    } finally {
      await db.drop();
    }
  });
});
