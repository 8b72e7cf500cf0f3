import { randomUUID } from 'node:crypto';
import { TOPICS, type AuditOperation, type AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import { BUILTIN_ROLES } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, any>;

/**
 * Spec (issue 6): failed attempts of tracked operations are recorded as Failure. A body that fails
 * validation (422) is refused before the service's own audit.track runs; the global
 * TrackedOperationInterceptor records it. Each attempt yields exactly one event.
 */
describe('tracked operations: every attempt audited once, 422s included', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone({ CONTROL_PLANE_INSTALLATION: 'cloud', ROLLOUT_WORKER: 'false' });
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `audit-failures-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  /** Runs one request and returns its status, its body and the audit events it caused. */
  async function attempt(path: string, init: RequestInit & { json?: unknown }): Promise<{ status: number; body: Json; events: AuditRecord[] }> {
    const before = audit.length;
    const res = await svc.api(path, init);
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {}, events: audit.slice(before) };
  }

  async function expect422Failure(operation: AuditOperation, path: string, init: RequestInit & { json?: unknown }, resource?: { type: string; id: string }): Promise<AuditRecord> {
    const r = await attempt(path, init);
    expect(r.status).toBe(422);
    for (const d of r.body.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    expect(r.events.map((e) => [e.operation, e.status])).toEqual([[operation, 'Failure']]);
    const [ev] = r.events;
    expect(ev).toMatchObject({ organization_id: svc.organizationId, workspace_id: svc.workspaceId, credential_id: expect.any(String), service: 'standalone' });
    expect(ev.error).toEqual(expect.any(String));
    expect(ev.error).not.toBe('');
    expect(ev.request).toMatchObject({ method: init.method, path: path.split('?')[0] });
    expect(ev.resources).toEqual(resource ? [resource] : []);
    return ev;
  }

  async function expectSuccess(operation: AuditOperation, path: string, init: RequestInit & { json?: unknown }, status = 200): Promise<Json> {
    const r = await attempt(path, init);
    expect(r.status).toBe(status);
    expect(r.events.map((e) => [e.operation, e.status])).toEqual([[operation, 'Success']]);
    return r.body;
  }

  it('query: PATCH /sessions/{id} with an invalid body is one Failure naming the session; a valid one is one Success', async () => {
    const created = await svc.api('/api/v1/sessions', { method: 'POST', json: { name: `af-${randomUUID()}` } });
    expect(created.status).toBe(200);
    const id = ((await created.json()) as Json).id as string;
    const ev = await expect422Failure('update_tracer_session', `/api/v1/sessions/${id}`, { method: 'PATCH', json: { name: 42 } }, { type: 'tracer_session', id });
    expect(ev.error).toContain('body.name');
    // nothing written by the refused attempt
    expect(((await (await svc.api(`/api/v1/sessions/${id}`)).json()) as Json).name).toMatch(/^af-/);
    await expectSuccess('update_tracer_session', `/api/v1/sessions/${id}`, { method: 'PATCH', json: { description: 'ok' } });
  });

  it('query: a failure inside the service (404) is still recorded once, by the service itself', async () => {
    const missing = randomUUID();
    const r = await attempt(`/api/v1/sessions/${missing}`, { method: 'DELETE' });
    expect(r.status).toBe(404);
    expect(r.events.map((e) => [e.operation, e.status, e.resources[0]?.id])).toEqual([['delete_tracer_session', 'Failure', missing]]);
  });

  it('datasets: create, update and example writes with invalid bodies are one Failure each; valid ones one Success', async () => {
    await expect422Failure('create_dataset', '/api/v1/datasets', { method: 'POST', json: { name: '' } });
    const ds = await expectSuccess('create_dataset', '/api/v1/datasets', { method: 'POST', json: { name: `af-ds-${randomUUID()}` } });
    await expect422Failure('update_dataset', `/api/v1/datasets/${ds.id}`, { method: 'PATCH', json: { name: 7 } }, { type: 'dataset', id: ds.id });
    await expectSuccess('update_dataset', `/api/v1/datasets/${ds.id}`, { method: 'PATCH', json: { description: 'changed' } });
    await expect422Failure('create_example', '/api/v1/examples', { method: 'POST', json: { dataset_id: ds.id, inputs: 'not an object' } });
    await expect422Failure('create_examples', '/api/v1/examples/bulk', { method: 'POST', json: [{ dataset_id: ds.id }] });
    await expectSuccess('create_example', '/api/v1/examples', { method: 'POST', json: { dataset_id: ds.id, inputs: { q: 1 } } });
    // a path that is not a UUID names no resource
    await expect422Failure('update_example', '/api/v1/examples/not-a-uuid', { method: 'PATCH', json: {} });
  });

  it('experiments: upload-experiment with an invalid body is one Failure', async () => {
    await expect422Failure('create_experiment_via_upload', '/api/v1/datasets/upload-experiment', { method: 'POST', json: { experiment_name: 'x' } });
  });

  it('ingest: model price map create with an invalid body is one Failure; a valid one one Success', async () => {
    await expect422Failure('create_model_price_map', '/api/v1/model-price-map', { method: 'POST', json: { name: 'nope' } });
    await expectSuccess('create_model_price_map', '/api/v1/model-price-map', {
      method: 'POST',
      json: { name: `af-${randomUUID().slice(0, 8)}`, match_pattern: '^af-model$', prompt_cost: 0.01, completion_cost: 0.02 },
    });
  });

  it('export-worker: destination and export creation with invalid bodies are one Failure each; a destination read one Success', async () => {
    await expect422Failure('create_bulk_export_destination', '/api/v1/bulk-exports/destinations', { method: 'POST', json: { destination_type: 'objstore' } });
    await expect422Failure('create_bulk_export', '/api/v1/bulk-exports', { method: 'POST', json: { bulk_export_destination_id: 'x' } });
    await expectSuccess('read_bulk_export_destination', '/api/v1/bulk-exports/destinations', { method: 'GET' });
  });

  it('control-plane: deployment create with an invalid body is one Failure; a valid one one Success', async () => {
    await expect422Failure('create_deployment', '/v2/deployments', { method: 'POST', json: { name: 'af-bad' } });
    const integration = ((await (await svc.api('/v1/integrations/git_host/install')).json()) as Json).integration_id as string;
    await expectSuccess(
      'create_deployment',
      '/v2/deployments',
      {
        method: 'POST',
        json: {
          name: `af-${randomUUID().slice(0, 8)}`,
          source: 'git_host',
          source_config: { integration_id: integration, repo_url: 'https://git.example/org/none.git' },
          source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
          secrets: [],
        },
      },
      201,
    );
  });

  it('gateway admin: API key creation with an invalid body is one Failure; a valid one one Success', async () => {
    await expect422Failure('create_api_key', '/api/v1/api-key', { method: 'POST', json: { description: 5 } });
    await expectSuccess('create_api_key', '/api/v1/api-key', { method: 'POST', json: { description: 'af' } });
  });
  describe('refused by the auth guard (401/403) before the handler runs', () => {
    let viewerKey: string;
    beforeAll(async () => {
      const res = await svc.api('/api/v1/api-key', { method: 'POST', json: { description: 'viewer', role_id: BUILTIN_ROLES.workspaceViewer.id } });
      expect(res.status).toBe(200);
      viewerKey = ((await res.json()) as Json).key as string;
    });
    const countDatasets = async () => ((await (await svc.api('/api/v1/datasets?limit=100')).json()) as Json[]).length;

    it('a viewer key refused on a tracked write: 403 and one Failure with the key as actor; nothing written', async () => {
      const before = await countDatasets();
      const r = await attempt('/api/v1/datasets', { method: 'POST', json: { name: `af-viewer-${randomUUID()}` }, headers: { 'x-api-key': viewerKey } });
      expect(r.status).toBe(403);
      expect(r.events).toHaveLength(1);
      expect(r.events[0]).toMatchObject({
        operation: 'create_dataset',
        status: 'Failure',
        organization_id: svc.organizationId,
        workspace_id: svc.workspaceId,
        credential_type: 'api_key',
        credential_id: expect.any(String),
        resources: [],
        request: { method: 'POST', path: '/api/v1/datasets' },
      });
      expect(r.events[0].error).toEqual(r.body.detail);
      expect(await countDatasets()).toBe(before);
    });

    it('a refused write names the resource of a tracked route', async () => {
      const id = randomUUID();
      const r = await attempt(`/api/v1/datasets/${id}`, { method: 'DELETE', headers: { 'x-api-key': viewerKey } });
      expect(r.status).toBe(403);
      expect(r.events.map((e) => [e.operation, e.status, e.resources])).toEqual([['delete_dataset', 'Failure', [{ type: 'dataset', id }]]]);
    });

    it('a valid key asking for a workspace it may not act in: 403 and one Failure attributed to the key and its organization', async () => {
      const r = await attempt('/api/v1/datasets', { method: 'POST', json: { name: `af-ws-${randomUUID()}` }, headers: { 'x-tenant-id': randomUUID() } });
      expect(r.status).toBe(403);
      expect(r.events).toHaveLength(1);
      expect(r.events[0]).toMatchObject({ operation: 'create_dataset', status: 'Failure', organization_id: svc.organizationId, credential_id: expect.any(String) });
      expect(r.events[0].error).toBe('This API key cannot act in the requested workspace');
    });

    it('unauthenticated attempts (no key, unknown key) get 401 and are not recorded: they belong to no organization', async () => {
      const before = audit.length;
      const none = await fetch(`${svc.url}/api/v1/datasets`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'x' }) });
      expect(none.status).toBe(401);
      const unknown = await attempt('/api/v1/datasets', { method: 'POST', json: { name: 'x' }, headers: { 'x-api-key': 'th_unknown' } });
      expect(unknown.status).toBe(401);
      expect(audit.length).toBe(before);
      expect(audit.some((e) => e.request?.path === '/api/v1/datasets' && e.organization_id === null)).toBe(false);
    });

    it('a refusal on a route that is not tracked records nothing', async () => {
      // Creating a tracing project is not one of the spec's tracked operations.
      const r = await attempt('/api/v1/sessions', { method: 'POST', json: { name: `af-untracked-${randomUUID()}` }, headers: { 'x-api-key': viewerKey } });
      expect(r.status).toBe(403);
      expect(r.events).toEqual([]);
    });
  });
});
