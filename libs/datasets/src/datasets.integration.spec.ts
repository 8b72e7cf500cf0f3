import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { InProcessBus } from '@th/bus';
import { AuditPublisher, inTrackedOperation } from '@th/audit-client';
import { TOPICS, routeSpecOf, type AuditRecord, type DatasetCreate, type ExampleCreate, type Identity } from '@th/contracts';
import { openServiceDataSource } from '@th/database';
import { createTestDatabase } from '@th/testing';
import { DatasetsService } from './datasets.service';
import { DatasetsStore } from './datasets.store';
import { ExamplesService } from './examples.service';
import { DATASETS_ENTITIES, DATASETS_MIGRATIONS } from './index';
import { ExampleSchemaValidator } from './schema-validator';

/** The services on the machine's PostgreSQL: transactions shared with a caller, concurrent versions, workspaces. */
describe('datasets services on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let bus: InProcessBus;
  let datasets: DatasetsService;
  let examples: ExamplesService;
  const audit: AuditRecord[] = [];
  const identity = { tenant_id: randomUUID(), organization_id: randomUUID(), user_id: null, credential_id: randomUUID(), credential_type: 'api_key' } as unknown as Identity;
  const other = { ...identity, tenant_id: randomUUID() } as Identity;

  beforeAll(async () => {
    db = await createTestDatabase('th_datasets');
    ds = await openServiceDataSource({ url: db.url, schema: 'datasets', entities: DATASETS_ENTITIES, migrations: DATASETS_MIGRATIONS, poolSize: 8 });
    bus = new InProcessBus();
    await bus.subscribe(TOPICS.audit, { groupId: 'datasets-int' }, async (batch) => {
      for (const m of batch) audit.push(m.value as AuditRecord);
    });
    const store = new DatasetsStore(ds);
    const validator = new ExampleSchemaValidator();
    const publisher = new AuditPublisher(bus, 'query');
    datasets = new DatasetsService(store, validator, publisher);
    examples = new ExamplesService(store, validator, publisher);
  });
  afterAll(async () => {
    await bus?.close();
    await ds?.destroy();
    await db?.drop();
  });

  /** Calls a tracked service method as the route that serves it does: as that route's operation, read from its table entry. */
  function asRoute<T>(method: string, routerPath: string, fn: () => Promise<T>): Promise<T> {
    const operation = routeSpecOf(method, routerPath)?.audit?.operation;
    if (!operation) throw new Error(`${method} ${routerPath} is not a tracked route`);
    return inTrackedOperation(operation, fn);
  }
  const createDataset = (who: Identity, body: DatasetCreate) => asRoute('POST', '/datasets', () => datasets.create(who, body));
  const createExamples = (who: Identity, datasetId: string, list: ExampleCreate[]) =>
    asRoute('POST', '/v1/platform/datasets/:dataset_id/examples', () => examples.createMany(who, datasetId, list));
  const deleteExamples = (who: Identity, ids: string[], hard?: boolean) => asRoute('POST', '/v1/platform/datasets/examples/delete', () => examples.deleteMany(who, ids, hard));

  it('joins a caller transaction: a rollback leaves neither the dataset nor its examples, and no audit event', async () => {
    const name = `upload-${randomUUID()}`;
    const auditBefore = audit.length;
    await expect(
      ds.transaction(async (m) => {
        const d = await datasets.create(identity, { name, inputs_schema_definition: { type: 'object' } }, { createdByUpload: true, manager: m });
        expect(d).toMatchObject({ created_by_upload: true, externally_managed: true });
        const made = await examples.createMany(identity, d.id, [{ id: randomUUID(), inputs: { a: 1 } }], { manager: m });
        expect(made).toHaveLength(1);
        expect((await datasets.findByName(identity, name, m))?.example_count).toBe(1);
        throw new Error('caller failed later');
      }),
    ).rejects.toThrow('caller failed later');
    expect(await datasets.findByName(identity, name)).toBeNull();
    expect((await ds.query(`SELECT count(*)::int AS n FROM "datasets"."examples" WHERE tenant_id = $1`, [identity.tenant_id]))[0].n).toBe(0);
    expect(audit.length).toBe(auditBefore);
  });

  it('concurrent writes to one dataset get consecutive versions with increasing as_of', async () => {
    const d = await createDataset(identity, { name: `conc-${randomUUID()}` });
    await Promise.all(Array.from({ length: 8 }, (_, i) => createExamples(identity, d.id, [{ inputs: { i } }])));
    const versions = await datasets.versions(identity, d.id, { offset: 0, limit: 100 });
    expect(versions).toHaveLength(9);
    const times = versions.map((v) => Date.parse(v.as_of)).reverse();
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThan(times[i - 1]);
    // each version as_of holds exactly as many examples as writes before it
    for (let k = 0; k < versions.length; k++) {
      const asOf = versions[versions.length - 1 - k].as_of;
      expect(await examples.list(identity, { dataset: d.id, as_of: asOf, offset: 0, limit: 100 })).toHaveLength(k);
    }
    expect((await datasets.get(identity, d.id)).example_count).toBe(8);
    // each write recorded once, as the operation of the route it ran as
    const mine = audit.filter((e) => e.resources.some((r) => r.id === d.id));
    expect(mine.map((e) => `${e.operation} ${e.status}`).sort()).toEqual(['create_dataset Success', ...Array<string>(8).fill('create_examples Success')]);
  });

  it('a tracked write called outside any tracked operation is refused before it writes, and records nothing', async () => {
    const name = `untracked-${randomUUID()}`;
    const auditBefore = audit.length;
    await expect(datasets.create(identity, { name })).rejects.toThrow(/No tracked operation here/);
    expect(await datasets.findByName(identity, name)).toBeNull();
    expect(audit.length).toBe(auditBefore);
  });

  it('keeps workspaces apart: another workspace sees 404 and may reuse the name', async () => {
    const name = `shared-name-${randomUUID()}`;
    const mine = await createDataset(identity, { name });
    await expect(datasets.get(other, mine.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(createExamples(other, mine.id, [{ inputs: {} }])).rejects.toMatchObject({ code: 'not_found' });
    const theirs = await createDataset(other, { name });
    expect(theirs.id).not.toBe(mine.id);
    const [ex] = await createExamples(identity, mine.id, [{ inputs: { x: 1 } }]);
    await expect(examples.get(other, ex.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(deleteExamples(other, [ex.id])).rejects.toMatchObject({ code: 'not_found' });
    expect((await examples.get(identity, ex.id)).inputs).toEqual({ x: 1 });
  });

  it('hard delete removes the history too; soft delete keeps it for older versions', async () => {
    const d = await createDataset(identity, { name: `hard-${randomUUID()}` });
    const [a, b] = await createExamples(identity, d.id, [{ inputs: { n: 'a' } }, { inputs: { n: 'b' } }]);
    const v1 = (await datasets.get(identity, d.id)).modified_at;
    await deleteExamples(identity, [a.id], false);
    await deleteExamples(identity, [b.id], true);
    const old = await examples.list(identity, { dataset: d.id, as_of: v1, offset: 0, limit: 10 });
    expect(old.map((e) => e.id)).toEqual([a.id]);
    expect(await examples.list(identity, { dataset: d.id, offset: 0, limit: 10 })).toEqual([]);
  });

  it('filters by the filter language and refuses unsupported expressions instead of answering unfiltered', async () => {
    const d = await createDataset(identity, { name: `filter-${randomUUID()}` });
    await createExamples(identity, d.id, [{ inputs: { q: 1 }, metadata: { a: 1 } }, { inputs: { q: 2 }, metadata: { a: 2 } }]);
    const got = await examples.list(identity, { dataset: d.id, filter: 'has(metadata, \'{"a":1}\')', offset: 0, limit: 10 });
    expect(got.map((e) => e.inputs.q)).toEqual([1]);
    await expect(examples.list(identity, { dataset: d.id, filter: 'search("a")', offset: 0, limit: 10 })).rejects.toMatchObject({ code: 'validation' });
  });
});
