import { randomUUID } from 'node:crypto';
import { openServiceDataSource } from '@th/database';
import { createTestDatabase } from '@th/testing';
import { QUERY_ENTITIES, QUERY_MIGRATIONS } from '../index';
import { Projects1732250000000 } from './1732250000000-projects';

/** An installation upgraded with projects in it: the per-workspace key keeps them and frees their ids elsewhere. */
describe('projects: per-workspace ids on an existing database', () => {
  it('keeps the rows; another workspace may then use the same id, the same workspace may not', async () => {
    const db = await createTestDatabase('th_proj_keys');
    try {
      const [tenant, other, id] = [randomUUID(), randomUUID(), randomUUID()];
      const insert = `INSERT INTO query.projects (id, tenant_id, name, start_time) VALUES ($1, $2, $3, now())`;
      const before = await openServiceDataSource({ url: db.url, schema: 'query', entities: QUERY_ENTITIES, migrations: [Projects1732250000000] });
      await before.query(insert, [id, tenant, 'p']);
      await before.destroy();
      const after = await openServiceDataSource({ url: db.url, schema: 'query', entities: QUERY_ENTITIES, migrations: QUERY_MIGRATIONS });
      try {
        await after.query(insert, [id, other, 'p']);
        await expect(after.query(insert, [id, tenant, 'q'])).rejects.toMatchObject({ code: '23505' });
        expect(await after.query(`SELECT tenant_id FROM query.projects WHERE id = $1 ORDER BY tenant_id = $2`, [id, other])).toEqual([{ tenant_id: tenant }, { tenant_id: other }]);
      } finally {
        await after.destroy();
      }
    } finally {
      await db.drop();
    }
  });
});
