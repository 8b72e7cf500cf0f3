import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import { routeFor } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
const json = async <T = Json>(res: Response): Promise<T> => (await res.json()) as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const QA_INPUTS = { type: 'object', required: ['question'], properties: { question: { type: 'string', minLength: 1 } }, additionalProperties: false };
const QA_OUTPUTS = { type: 'object', required: ['answer'], properties: { answer: { type: 'string' } } };

describe('datasets and examples through the standalone service', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `datasets-e2e-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value as AuditRecord);
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const createDataset = async (body: Json): Promise<Json> => {
    const res = await svc.api('/api/v1/datasets', { method: 'POST', json: body });
    expect(res.status).toBe(200);
    return json(res);
  };
  const listExamples = async (query: string): Promise<Json[]> => {
    const res = await svc.api(`/api/v1/examples?${query}`);
    expect(res.status).toBe(200);
    return json<Json[]>(res);
  };
  /** Audit events arrive through the in-process bus after the response; wait (bounded) for the expected one. */
  const auditEvent = async (operation: string, status: 'Success' | 'Failure', resourceId?: string): Promise<AuditRecord> => {
    for (let i = 0; i < 100; i++) {
      const found = audit.find((e) => e.operation === operation && e.status === status && (!resourceId || e.resources.some((r) => r.id === resourceId)));
      if (found) return found;
      await sleep(50);
    }
    throw new Error(`no ${status} audit event ${operation} ${resourceId ?? ''}`);
  };

  it('routes datasets, examples and the platform examples paths to the query service in the cluster form', () => {
    const up = { ingest: 'http://i', query: 'http://q' };
    expect(routeFor('GET', '/api/v1/datasets', up)).toBe('http://q');
    expect(routeFor('POST', '/datasets/clone', up)).toBe('http://q');
    expect(routeFor('GET', '/api/v1/examples/abc', up)).toBe('http://q');
    expect(routeFor('POST', '/api/v1/platform/datasets/x/examples', up)).toBe('http://q');
    expect(routeFor('POST', '/v1/platform/datasets/examples/delete', up)).toBe('http://q');
  });

  it('creates, reads, lists, updates and deletes datasets with every field', async () => {
    const name = `ds-${randomUUID()}`;
    const created = await createDataset({
      name,
      description: 'qa pairs',
      data_type: 'kv',
      inputs_schema_definition: QA_INPUTS,
      outputs_schema_definition: QA_OUTPUTS,
      extra: { source: 'sdk', metadata: { team: 'eval', tier: 1 } },
    });
    expect(created).toMatchObject({
      name,
      description: 'qa pairs',
      data_type: 'kv',
      inputs_schema_definition: QA_INPUTS,
      outputs_schema_definition: QA_OUTPUTS,
      externally_managed: false,
      example_count: 0,
      session_count: 0,
      last_session_start_time: null,
      tenant_id: svc.workspaceId,
      metadata: { team: 'eval', tier: 1 },
      created_by_upload: false,
    });
    const id = created.id as string;
    expect(typeof created.created_at).toBe('string');
    expect(typeof created.modified_at).toBe('string');
    await auditEvent('create_dataset', 'Success', id);

    // duplicate name in the workspace → 409, and no second dataset
    const dup = await svc.api('/api/v1/datasets', { method: 'POST', json: { name } });
    expect(dup.status).toBe(409);
    await auditEvent('create_dataset', 'Failure');
    expect(await json<Json[]>(await svc.api(`/api/v1/datasets?name=${encodeURIComponent(name)}`))).toHaveLength(1);

    // invalid bodies → 422 {detail:[{loc,msg,type}]}
    const missingName = await svc.api('/api/v1/datasets', { method: 'POST', json: { description: 'x' } });
    expect(missingName.status).toBe(422);
    expect((await json<{ detail: Json[] }>(missingName)).detail[0]).toMatchObject({ loc: ['body', 'name'], type: 'missing' });
    const badType = await svc.api('/api/v1/datasets', { method: 'POST', json: { name: `x-${randomUUID()}`, data_type: 'table' } });
    expect(badType.status).toBe(422);
    const badSchemaName = `bad-schema-${randomUUID()}`;
    const badSchema = await svc.api('/api/v1/datasets', { method: 'POST', json: { name: badSchemaName, inputs_schema_definition: { type: 'no-such-type' } } });
    expect(badSchema.status).toBe(422);
    expect((await json<{ detail: Json[] }>(badSchema)).detail[0]).toMatchObject({ loc: ['body', 'inputs_schema_definition'], type: 'json_schema_invalid' });
    expect(await json<Json[]>(await svc.api(`/api/v1/datasets?name=${badSchemaName}`))).toEqual([]);

    // read by id (the SDK adds a stray ?limit=1), unknown → 404, malformed id → 422
    const read = await svc.api(`/api/v1/datasets/${id}?limit=1`);
    expect(read.status).toBe(200);
    expect((await json(read)).name).toBe(name);
    expect((await svc.api(`/api/v1/datasets/${randomUUID()}`)).status).toBe(404);
    expect((await svc.api('/api/v1/datasets/not-a-uuid')).status).toBe(422);

    // list filters: name (array), name_contains, id, data_type, metadata
    const chat = await createDataset({ name: `chat-${name}`, data_type: 'chat', extra: { metadata: { team: 'other' } } });
    expect((await json<Json[]>(await svc.api(`/api/v1/datasets?name=${encodeURIComponent(name)}`))).map((d) => d.id)).toEqual([id]);
    const contains = await json<Json[]>(await svc.api(`/api/v1/datasets?name_contains=${encodeURIComponent(name.slice(3))}`));
    expect(contains.map((d) => d.id).sort()).toEqual([id, chat.id].sort());
    expect((await json<Json[]>(await svc.api(`/api/v1/datasets?id=${id}&id=${chat.id as string}&data_type=chat`))).map((d) => d.id)).toEqual([chat.id]);
    const byMeta = await json<Json[]>(await svc.api(`/api/v1/datasets?metadata=${encodeURIComponent(JSON.stringify({ team: 'eval' }))}&name_contains=${name.slice(3)}`));
    expect(byMeta.map((d) => d.id)).toEqual([id]);
    expect((await svc.api('/api/v1/datasets?metadata=notjson')).status).toBe(422);
    const sorted = await json<Json[]>(await svc.api(`/api/v1/datasets?name_contains=${encodeURIComponent(name.slice(3))}&sort_by=name&sort_by_desc=false`));
    expect(sorted.map((d) => d.name)).toEqual([`chat-${name}`, name].sort());
    const page = await json<Json[]>(await svc.api(`/api/v1/datasets?name_contains=${encodeURIComponent(name.slice(3))}&limit=1&offset=1`));
    expect(page).toHaveLength(1);

    // update: description, metadata, name; a taken name → 409 and nothing changed
    const upd = await svc.api(`/api/v1/datasets/${id}`, { method: 'PATCH', json: { description: 'new', metadata: { team: 'eval2' } } });
    expect(upd.status).toBe(200);
    expect(await json(upd)).toMatchObject({ description: 'new', metadata: { team: 'eval2' }, name });
    await auditEvent('update_dataset', 'Success', id);
    const clash = await svc.api(`/api/v1/datasets/${id}`, { method: 'PATCH', json: { name: `chat-${name}`, description: 'lost' } });
    expect(clash.status).toBe(409);
    expect((await json(await svc.api(`/api/v1/datasets/${id}`))).description).toBe('new');
    await auditEvent('update_dataset', 'Failure', id);
    expect((await svc.api(`/api/v1/datasets/${randomUUID()}`, { method: 'PATCH', json: { description: 'x' } })).status).toBe(404);

    // delete one; delete many is all or nothing
    const a = await createDataset({ name: `a-${name}` });
    const b = await createDataset({ name: `b-${name}` });
    const missing = randomUUID();
    const partial = await svc.api(`/api/v1/datasets?id=${a.id as string}&id=${missing}`, { method: 'DELETE' });
    expect(partial.status).toBe(404);
    expect((await svc.api(`/api/v1/datasets/${a.id as string}`)).status).toBe(200);
    await auditEvent('delete_datasets', 'Failure', missing);
    expect((await svc.api(`/api/v1/datasets?id=${a.id as string}&id=${b.id as string}`, { method: 'DELETE' })).status).toBe(200);
    expect((await svc.api(`/api/v1/datasets/${a.id as string}`)).status).toBe(404);
    expect((await svc.api(`/api/v1/datasets/${b.id as string}`)).status).toBe(404);
    await auditEvent('delete_datasets', 'Success', b.id as string);
    expect((await svc.api(`/api/v1/datasets/${chat.id as string}`, { method: 'DELETE' })).status).toBe(200);
    expect((await svc.api(`/api/v1/datasets/${chat.id as string}`, { method: 'DELETE' })).status).toBe(404);
    await auditEvent('delete_dataset', 'Success', chat.id as string);
    await auditEvent('delete_dataset', 'Failure', chat.id as string);
  });

  it('enforces the JSON Schemas on examples and writes nothing of a rejected batch', async () => {
    const d = await createDataset({ name: `schema-${randomUUID()}`, inputs_schema_definition: QA_INPUTS, outputs_schema_definition: QA_OUTPUTS });
    const id = d.id as string;
    const versionsBefore = await json<Json[]>(await svc.api(`/api/v1/datasets/${id}/versions`));
    const bad = await svc.api('/api/v1/examples/bulk', {
      method: 'POST',
      json: [
        { dataset_id: id, inputs: { question: 'ok?' }, outputs: { answer: 'yes' } },
        { dataset_id: id, inputs: { question: 42 }, outputs: { answer: 'no' } },
        { dataset_id: id, inputs: { question: 'extra', other: 1 }, outputs: {} },
      ],
    });
    expect(bad.status).toBe(422);
    const detail = (await json<{ detail: { loc: unknown[]; msg: string; type: string }[] }>(bad)).detail;
    expect(detail).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ loc: ['body', 1, 'inputs', 'question'], type: 'json_schema_type' }),
        expect.objectContaining({ loc: ['body', 2, 'inputs'], type: 'json_schema_additionalProperties' }),
        expect.objectContaining({ loc: ['body', 2, 'outputs'], type: 'json_schema_required' }),
      ]),
    );
    expect(await listExamples(`dataset=${id}`)).toEqual([]);
    expect(await json<Json[]>(await svc.api(`/api/v1/datasets/${id}/versions`))).toEqual(versionsBefore);
    await auditEvent('create_examples', 'Failure', id);

    // a single example breaking the schema, and an unknown dataset
    const one = await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: id, inputs: {} } });
    expect(one.status).toBe(422);
    expect((await json<{ detail: Json[] }>(one)).detail[0]).toMatchObject({ loc: ['body', 'inputs'], type: 'json_schema_required' });
    const unknown = await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: randomUUID(), inputs: { question: 'q' } } });
    expect(unknown.status).toBe(404);
    expect((await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: id } })).status).toBe(422);

    // a valid example; then an update that breaks the schema is refused and changes nothing
    const good = await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: id, inputs: { question: 'q1' }, outputs: { answer: 'a1' } } });
    expect(good.status).toBe(200);
    const ex = await json(good);
    await auditEvent('create_example', 'Success', ex.id as string);
    const badUpdate = await svc.api(`/api/v1/examples/${ex.id as string}`, { method: 'PATCH', json: { outputs: { answer: 7 } } });
    expect(badUpdate.status).toBe(422);
    expect((await json(await svc.api(`/api/v1/examples/${ex.id as string}`))).outputs).toEqual({ answer: 'a1' });
    await auditEvent('update_example', 'Failure', ex.id as string);

    // a stricter dataset schema that the current example breaks is refused; one it meets is stored
    const stricter = await svc.api(`/api/v1/datasets/${id}`, {
      method: 'PATCH',
      json: { inputs_schema_definition: { ...QA_INPUTS, properties: { question: { type: 'string', minLength: 5 } } } },
    });
    expect(stricter.status).toBe(422);
    expect((await json<{ detail: Json[] }>(stricter)).detail[0].loc).toEqual(['body', 'inputs_schema_definition', 'examples', ex.id, 'inputs', 'question']);
    expect((await json(await svc.api(`/api/v1/datasets/${id}`))).inputs_schema_definition).toEqual(QA_INPUTS);
    const looser = await svc.api(`/api/v1/datasets/${id}`, { method: 'PATCH', json: { outputs_schema_definition: { type: 'object' } } });
    expect(looser.status).toBe(200);
    expect((await json(looser)).outputs_schema_definition).toEqual({ type: 'object' });
  });

  it('creates, reads, lists, updates and deletes examples, one and many', async () => {
    const d = await createDataset({ name: `ex-${randomUUID()}` });
    const id = d.id as string;
    const run = randomUUID();
    const givenId = randomUUID();
    const bulk = await svc.api('/api/v1/examples/bulk', {
      method: 'POST',
      json: [
        { id: givenId, dataset_id: id, inputs: { q: 1 }, outputs: { a: 1 }, metadata: { lang: 'en' }, split: 'train', source_run_id: run },
        { dataset_id: id, inputs: { q: 2 }, outputs: { a: 2 }, metadata: { lang: 'de' }, split: ['test', 'hard'] },
        { dataset_id: id, inputs: { q: 3 } },
      ],
    });
    expect(bulk.status).toBe(200);
    const created = await json<Json[]>(bulk);
    expect(created).toHaveLength(3);
    expect(created[0]).toMatchObject({ id: givenId, dataset_id: id, inputs: { q: 1 }, outputs: { a: 1 }, source_run_id: run, split: ['train'], metadata: { lang: 'en', dataset_split: ['train'] } });
    expect(created[2]).toMatchObject({ outputs: null, split: ['base'] });
    await auditEvent('create_examples', 'Success', givenId);

    // the same id again → 409, nothing written
    const again = await svc.api('/api/v1/examples/bulk', { method: 'POST', json: [{ dataset_id: id, inputs: { q: 9 } }, { id: givenId, dataset_id: id, inputs: { q: 1 } }] });
    expect(again.status).toBe(409);
    expect(await listExamples(`dataset=${id}`)).toHaveLength(3);

    const got = await svc.api(`/api/v1/examples/${givenId}`);
    expect(got.status).toBe(200);
    expect(await json(got)).toMatchObject({ id: givenId, inputs: { q: 1 } });
    expect((await svc.api(`/api/v1/examples/${randomUUID()}`)).status).toBe(404);
    expect((await json(await svc.api(`/api/v1/datasets/${id}`))).example_count).toBe(3);

    // filters
    expect((await listExamples(`dataset=${id}&splits=test`)).map((e) => e.inputs)).toEqual([{ q: 2 }]);
    expect((await listExamples(`dataset=${id}&splits=train&splits=hard`)).length).toBe(2);
    expect((await listExamples(`dataset=${id}&metadata=${encodeURIComponent(JSON.stringify({ lang: 'de' }))}`)).map((e) => e.inputs)).toEqual([{ q: 2 }]);
    expect((await listExamples(`dataset=${id}&id=${givenId}`)).map((e) => e.id)).toEqual([givenId]);
    expect((await listExamples(`id=${givenId}`)).map((e) => e.id)).toEqual([givenId]);
    expect(await listExamples(`dataset=${id}&limit=2&offset=2`)).toHaveLength(1);
    expect((await svc.api(`/api/v1/examples?dataset=${randomUUID()}`)).status).toBe(404);
    expect((await svc.api('/api/v1/examples')).status).toBe(422);

    // update one, update many (all or nothing)
    const up = await svc.api(`/api/v1/examples/${givenId}`, { method: 'PATCH', json: { outputs: { a: 'one' }, split: ['train', 'gold'] } });
    expect(up.status).toBe(200);
    expect(await json(up)).toMatchObject({ inputs: { q: 1 }, outputs: { a: 'one' }, split: ['gold', 'train'], metadata: { lang: 'en' } });
    await auditEvent('update_example', 'Success', givenId);
    const second = created[1].id as string;
    const third = created[2].id as string;
    const ghost = randomUUID();
    const partial = await svc.api('/api/v1/examples/bulk', { method: 'PATCH', json: [{ id: second, inputs: { q: 'changed' } }, { id: ghost, inputs: {} }] });
    expect(partial.status).toBe(404);
    expect((await json(await svc.api(`/api/v1/examples/${second}`))).inputs).toEqual({ q: 2 });
    const many = await svc.api('/api/v1/examples/bulk', { method: 'PATCH', json: [{ id: second, inputs: { q: 'two' } }, { id: third, metadata: { lang: 'fr' } }] });
    expect(many.status).toBe(200);
    expect((await json<Json[]>(many)).map((e) => e.id).sort()).toEqual([second, third].sort());
    expect((await json(await svc.api(`/api/v1/examples/${third}`))).metadata).toEqual({ lang: 'fr', dataset_split: ['base'] });
    await auditEvent('update_examples', 'Success', third);

    // delete one, delete many (all or nothing)
    expect((await svc.api(`/api/v1/examples/${givenId}`, { method: 'DELETE' })).status).toBe(200);
    expect((await svc.api(`/api/v1/examples/${givenId}`)).status).toBe(404);
    expect((await svc.api(`/api/v1/examples/${givenId}`, { method: 'DELETE' })).status).toBe(404);
    await auditEvent('delete_example', 'Success', givenId);
    await auditEvent('delete_example', 'Failure', givenId);
    expect((await svc.api(`/api/v1/examples?example_ids=${second}&example_ids=${ghost}`, { method: 'DELETE' })).status).toBe(404);
    expect(await listExamples(`dataset=${id}`)).toHaveLength(2);
    expect((await svc.api(`/api/v1/examples?example_ids=${second}&example_ids=${third}`, { method: 'DELETE' })).status).toBe(200);
    expect(await listExamples(`dataset=${id}`)).toEqual([]);
    expect((await json(await svc.api(`/api/v1/datasets/${id}`))).example_count).toBe(0);
    await auditEvent('delete_examples', 'Success', third);
  });

  it('makes a version per change and reads examples as of a version or a tag', async () => {
    const d = await createDataset({ name: `ver-${randomUUID()}` });
    const id = d.id as string;
    const v1 = await json<Json[]>(await svc.api('/api/v1/examples/bulk', { method: 'POST', json: [{ dataset_id: id, inputs: { n: 1 } }, { dataset_id: id, inputs: { n: 2 } }] }));
    const afterV1 = (await json(await svc.api(`/api/v1/datasets/${id}`))).modified_at as string;
    await svc.api(`/api/v1/examples/${v1[0].id as string}`, { method: 'PATCH', json: { inputs: { n: 10 } } });
    const afterV2 = (await json(await svc.api(`/api/v1/datasets/${id}`))).modified_at as string;
    await svc.api(`/api/v1/examples/${v1[1].id as string}`, { method: 'DELETE' });
    await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: id, inputs: { n: 3 } } });

    const versions = await json<{ as_of: string; tags: string[] }[]>(await svc.api(`/api/v1/datasets/${id}/versions`));
    expect(versions).toHaveLength(5); // creation + 4 changes, newest first
    expect(versions[3].as_of).toBe(afterV1);
    expect(versions[2].as_of).toBe(afterV2);
    const inputs = (list: Json[]) => list.map((e) => e.inputs as Json).sort((a, b) => Number(a.n) - Number(b.n));
    expect(inputs(await listExamples(`dataset=${id}&as_of=${encodeURIComponent(afterV1)}`))).toEqual([{ n: 1 }, { n: 2 }]);
    expect(inputs(await listExamples(`dataset=${id}&as_of=${encodeURIComponent(afterV2)}`))).toEqual([{ n: 2 }, { n: 10 }]);
    expect(inputs(await listExamples(`dataset=${id}`))).toEqual([{ n: 3 }, { n: 10 }]);
    expect(inputs(await listExamples(`dataset=${id}&as_of=latest`))).toEqual([{ n: 3 }, { n: 10 }]);
    expect(await listExamples(`dataset=${id}&as_of=${encodeURIComponent('2000-01-01T00:00:00Z')}`)).toEqual([]);
    // a deleted example is still readable as of a version that had it
    expect((await json(await svc.api(`/api/v1/examples/${v1[1].id as string}?as_of=${encodeURIComponent(afterV2)}`))).inputs).toEqual({ n: 2 });

    // the version current at a time, tags (update_dataset_version), reads by tag
    const at = await svc.api(`/api/v1/datasets/${id}/version?as_of=${encodeURIComponent(afterV1)}`);
    expect(await json(at)).toEqual({ as_of: afterV1, tags: [] });
    const tag = await svc.api(`/api/v1/datasets/${id}/tags`, { method: 'PUT', json: { as_of: afterV1, tag: 'prod' } });
    expect(tag.status).toBe(200);
    expect(await json(tag)).toEqual({ as_of: afterV1, tags: ['prod'] });
    await auditEvent('update_dataset_version', 'Success', id);
    expect(inputs(await listExamples(`dataset=${id}&as_of=prod`))).toEqual([{ n: 1 }, { n: 2 }]);
    expect(await json(await svc.api(`/api/v1/datasets/${id}/version?tag=prod`))).toEqual({ as_of: afterV1, tags: ['prod'] });
    // the difference between two versions (a tag and a timestamp)
    const latest = (await json(await svc.api(`/api/v1/datasets/${id}`))).modified_at as string;
    const diff = await json(await svc.api(`/api/v1/datasets/${id}/versions/diff?from_version=prod&to_version=${encodeURIComponent(latest)}`));
    const added = (await listExamples(`dataset=${id}`)).find((e) => (e.inputs as Json).n === 3)!.id;
    expect(diff).toEqual({ examples_modified: [v1[0].id], examples_added: [added], examples_removed: [v1[1].id] });
    expect((await svc.api(`/api/v1/datasets/${id}/versions/diff?from_version=prod`)).status).toBe(422);
    // moving the tag to a later version
    await svc.api(`/api/v1/datasets/${id}/tags`, { method: 'PUT', json: { as_of: afterV2, tag: 'prod' } });
    expect(inputs(await listExamples(`dataset=${id}&as_of=prod`))).toEqual([{ n: 2 }, { n: 10 }]);
    expect((await svc.api(`/api/v1/examples?dataset=${id}&as_of=no-such-tag`)).status).toBe(404);
    expect((await svc.api(`/api/v1/datasets/${id}/version?tag=no-such-tag`)).status).toBe(404);
    const badTag = await svc.api(`/api/v1/datasets/${id}/tags`, { method: 'PUT', json: { as_of: '1999-01-01T00:00:00Z', tag: 'old' } });
    expect(badTag.status).toBe(404);
    await auditEvent('update_dataset_version', 'Failure', id);
    expect((await svc.api(`/api/v1/datasets/${id}/tags`, { method: 'PUT', json: { tag: 'x' } })).status).toBe(422);
  });

  it('updates splits as a new version and lists split names', async () => {
    const d = await createDataset({ name: `splits-${randomUUID()}` });
    const id = d.id as string;
    const ex = await json<Json[]>(await svc.api('/api/v1/examples/bulk', { method: 'POST', json: [1, 2, 3].map((n) => ({ dataset_id: id, inputs: { n } })) }));
    const ids = ex.map((e) => e.id as string);
    const before = (await json(await svc.api(`/api/v1/datasets/${id}`))).modified_at as string;
    expect(await json(await svc.api(`/api/v1/datasets/${id}/splits`))).toEqual(['base']);
    const put = await svc.api(`/api/v1/datasets/${id}/splits`, { method: 'PUT', json: { split_name: 'test', examples: ids.slice(0, 2) } });
    expect(put.status).toBe(200);
    expect(await json(put)).toEqual(ids.slice(0, 2));
    await auditEvent('update_dataset_splits', 'Success', id);
    expect(await json(await svc.api(`/api/v1/datasets/${id}/splits`))).toEqual(['base', 'test']);
    expect((await listExamples(`dataset=${id}&splits=test`)).map((e) => e.id).sort()).toEqual(ids.slice(0, 2).sort());
    expect(await json(await svc.api(`/api/v1/datasets/${id}/splits?as_of=${encodeURIComponent(before)}`))).toEqual(['base']);
    const rm = await svc.api(`/api/v1/datasets/${id}/splits`, { method: 'PUT', json: { split_name: 'test', examples: [ids[0]], remove: true } });
    expect(rm.status).toBe(200);
    expect((await listExamples(`dataset=${id}&splits=test`)).map((e) => e.id)).toEqual([ids[1]]);
    // an example of another dataset → 404, nothing changed
    const other = await createDataset({ name: `splits-other-${randomUUID()}` });
    const foreign = await json(await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: other.id, inputs: { n: 0 } } }));
    const wrong = await svc.api(`/api/v1/datasets/${id}/splits`, { method: 'PUT', json: { split_name: 'x', examples: [ids[2], foreign.id] } });
    expect(wrong.status).toBe(404);
    expect(await json(await svc.api(`/api/v1/datasets/${id}/splits`))).toEqual(['base', 'test']);
    await auditEvent('update_dataset_splits', 'Failure', id);
  });

  it('clones a dataset version into another dataset', async () => {
    const src = await createDataset({ name: `clone-src-${randomUUID()}` });
    const made = await json<Json[]>(
      await svc.api('/api/v1/examples/bulk', {
        method: 'POST',
        json: [
          { dataset_id: src.id, inputs: { n: 1 }, outputs: { o: 1 }, split: 'train' },
          { dataset_id: src.id, inputs: { n: 2 }, split: 'test' },
        ],
      }),
    );
    const v1 = (await json(await svc.api(`/api/v1/datasets/${src.id as string}`))).modified_at as string;
    await svc.api(`/api/v1/examples/${made[0].id as string}`, { method: 'PATCH', json: { inputs: { n: 100 } } });
    const dst = await createDataset({ name: `clone-dst-${randomUUID()}`, inputs_schema_definition: { type: 'object', required: ['n'] } });
    const res = await svc.api('/api/v1/datasets/clone', { method: 'POST', json: { source_dataset_id: src.id, target_dataset_id: dst.id, as_of: v1, split: 'train' } });
    expect(res.status).toBe(200);
    const cloned = await json<Json[]>(res);
    expect(cloned).toHaveLength(1);
    expect(cloned[0]).toMatchObject({ dataset_id: dst.id, inputs: { n: 1 }, outputs: { o: 1 }, split: ['train'] });
    expect(cloned[0].id).not.toBe(made[0].id);
    await auditEvent('clone_dataset', 'Success', dst.id as string);
    // a target whose schema the source breaks → 422, nothing cloned
    const strict = await createDataset({ name: `clone-strict-${randomUUID()}`, inputs_schema_definition: { type: 'object', required: ['m'] } });
    const refused = await svc.api('/api/v1/datasets/clone', { method: 'POST', json: { source_dataset_id: src.id, target_dataset_id: strict.id } });
    expect(refused.status).toBe(422);
    expect(await listExamples(`dataset=${strict.id as string}`)).toEqual([]);
    expect((await svc.api('/api/v1/datasets/clone', { method: 'POST', json: { source_dataset_id: randomUUID(), target_dataset_id: dst.id } })).status).toBe(404);
    await auditEvent('clone_dataset', 'Failure');
  });

  it('shares a dataset read-only by token and unshares it', async () => {
    const d = await createDataset({ name: `share-${randomUUID()}`, description: 'public' });
    const id = d.id as string;
    await svc.api('/api/v1/examples', { method: 'POST', json: { dataset_id: id, inputs: { q: 'shared' }, split: 'test' } });
    expect(await json(await svc.api(`/api/v1/datasets/${id}/share`))).toBeNull();
    const shared = await svc.api(`/api/v1/datasets/${id}/share`, { method: 'PUT' });
    expect(shared.status).toBe(200);
    const { share_token } = await json<{ share_token: string; dataset_id: string }>(shared);
    await auditEvent('share_dataset', 'Success', id);
    // idempotent: sharing again keeps the token
    expect((await json(await svc.api(`/api/v1/datasets/${id}/share`, { method: 'PUT' }))).share_token).toBe(share_token);
    expect(await json(await svc.api(`/api/v1/datasets/${id}/share`))).toEqual({ dataset_id: id, share_token });
    // public reads need no API key
    const pub = await fetch(`${svc.url}/api/v1/public/${share_token}/datasets`);
    expect(pub.status).toBe(200);
    expect(await json(pub)).toMatchObject({ id, description: 'public', example_count: 1 });
    const pubEx = await fetch(`${svc.url}/api/v1/public/${share_token}/examples?splits=test`);
    expect((await json<Json[]>(pubEx)).map((e) => e.inputs)).toEqual([{ q: 'shared' }]);
    expect((await fetch(`${svc.url}/api/v1/public/${randomUUID()}/datasets`)).status).toBe(404);
    // unshare: the token stops working; unknown dataset → 404
    expect((await svc.api(`/api/v1/datasets/${id}/share`, { method: 'DELETE' })).status).toBe(200);
    await auditEvent('unshare_dataset', 'Success', id);
    expect((await fetch(`${svc.url}/api/v1/public/${share_token}/datasets`)).status).toBe(404);
    expect((await fetch(`${svc.url}/api/v1/public/${share_token}/examples`)).status).toBe(404);
    expect(await json(await svc.api(`/api/v1/datasets/${id}/share`))).toBeNull();
    expect((await svc.api(`/api/v1/datasets/${randomUUID()}/share`, { method: 'PUT' })).status).toBe(404);
    await auditEvent('share_dataset', 'Failure');
    // another workspace's key cannot read or share it
    expect((await svc.api(`/api/v1/datasets/${id}`, { headers: { 'x-api-key': 'th_not_a_key' } })).status).toBe(401);
  });

  it('counts experiments (sessions with the dataset as reference) on the dataset', async () => {
    const d = await createDataset({ name: `sessions-${randomUUID()}` });
    const start = '2026-11-20T10:00:00.000000Z';
    const p = await svc.api('/api/v1/sessions', { method: 'POST', json: { name: `exp-${randomUUID()}`, reference_dataset_id: d.id, start_time: start } });
    expect(p.status).toBe(200);
    const read = await json(await svc.api(`/api/v1/datasets/${d.id as string}`));
    expect(read.session_count).toBe(1);
    expect(read.last_session_start_time).toBe('2026-11-20T10:00:00.000Z');
    const sorted = await json<Json[]>(await svc.api(`/api/v1/datasets?id=${d.id as string}&sort_by=session_count`));
    expect(sorted[0].session_count).toBe(1);
  });

  it('works with the published langsmith SDK dataset and example functions', async () => {
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, timeout_ms: 20_000 });
    const name = `sdk-ds-${randomUUID()}`;
    const ds = await client.createDataset(name, { description: 'sdk made', dataType: 'kv', metadata: { by: 'sdk' }, inputsSchema: QA_INPUTS, outputsSchema: QA_OUTPUTS });
    expect(ds.name).toBe(name);
    expect((await client.readDataset({ datasetName: name })).id).toBe(ds.id);
    expect((await client.readDataset({ datasetId: ds.id })).name).toBe(name);
    expect(await client.hasDataset({ datasetName: name })).toBe(true);
    expect(await client.hasDataset({ datasetName: `${name}-missing` })).toBe(false);
    const listed = [];
    for await (const d of client.listDatasets({ datasetNameContains: name })) listed.push(d.id);
    expect(listed).toEqual([ds.id]);

    const created = await client.createExamples([
      { inputs: { question: 'a?' }, outputs: { answer: 'A' }, dataset_id: ds.id, metadata: { k: 1 }, split: 'train' },
      { inputs: { question: 'b?' }, outputs: { answer: 'B' }, dataset_id: ds.id, split: ['test'] },
    ]);
    expect(created).toHaveLength(2);
    // the schema holds for SDK writes too
    await expect(client.createExamples([{ inputs: { question: 5 }, outputs: { answer: 'x' }, dataset_id: ds.id }])).rejects.toThrow(/422/);
    const afterCreate = (await client.readDataset({ datasetId: ds.id })).modified_at as unknown as string;

    const all = [];
    for await (const e of client.listExamples({ datasetId: ds.id })) all.push(e);
    expect(all.map((e) => e.inputs.question).sort()).toEqual(['a?', 'b?']);
    const train = [];
    for await (const e of client.listExamples({ datasetId: ds.id, splits: ['train'] })) train.push(e);
    expect(train.map((e) => e.inputs.question)).toEqual(['a?']);
    const exA = all.find((e) => e.inputs.question === 'a?')!;
    expect((await client.readExample(exA.id)).outputs).toEqual({ answer: 'A' });

    await client.updateExample(exA.id, { outputs: { answer: 'AA' } });
    expect((await client.readExample(exA.id)).outputs).toEqual({ answer: 'AA' });
    await client.updateDatasetSplits({ datasetId: ds.id, splitName: 'gold', exampleIds: [exA.id] });
    expect((await client.listDatasetSplits({ datasetId: ds.id })).sort()).toEqual(['gold', 'test', 'train']);
    await client.deleteExample(all.find((e) => e.inputs.question === 'b?')!.id);

    const old = [];
    for await (const e of client.listExamples({ datasetId: ds.id, asOf: afterCreate })) old.push(e);
    expect(old.map((e) => [e.inputs.question, e.outputs?.answer]).sort()).toEqual([
      ['a?', 'A'],
      ['b?', 'B'],
    ]);
    await client.updateDatasetTag({ datasetId: ds.id, asOf: afterCreate, tag: 'v1' });
    const diff = await client.diffDatasetVersions({ datasetId: ds.id, fromVersion: 'v1', toVersion: 'latest' });
    expect(diff.examples_modified).toEqual([exA.id]);
    expect(diff.examples_removed).toHaveLength(1);
    expect((await client.readDatasetVersion({ datasetId: ds.id, tag: 'v1' })).as_of).toBe(afterCreate);
    const now = [];
    for await (const e of client.listExamples({ datasetId: ds.id })) now.push(e);
    expect(now.map((e) => e.outputs?.answer)).toEqual(['AA']);

    const share = await client.shareDataset(ds.id);
    expect((await client.readDatasetSharedSchema(ds.id))?.share_token).toBe(share.share_token);
    expect((await client.readSharedDataset(share.share_token)).id).toBe(ds.id);
    await client.unshareDataset(ds.id);
    // not shared: the share state is null (the SDK's readDatasetSharedSchema assumes a shared dataset)
    expect(await json(await svc.api(`/api/v1/datasets/${ds.id}/share`))).toBeNull();

    await client.deleteDataset({ datasetId: ds.id });
    expect(await client.hasDataset({ datasetId: ds.id })).toBe(false);
  });
});
