import { randomUUID } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { eventually, type Json, type SuiteCluster, useSharedCluster } from './cluster-client';

const DAY = 86_400_000;

/** The gateway's administration in the cluster form: audit events over Kafka, settings in the signed identity. */
describe('identity in the cluster form', () => {
  let cluster: SuiteCluster;
  const audit: Json[] = [];
  let stopConsumer: () => Promise<void>;

  const call = (path: string, init: { method?: string; json?: unknown; key?: string; headers?: Record<string, string> } = {}) =>
    fetch(`${cluster.gateway.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { 'x-api-key': init.key ?? cluster.apiKey, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
  const ok = async (res: Response, status = 200): Promise<Json> => {
    const text = await res.text();
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
    return JSON.parse(text) as Json;
  };

  useSharedCluster((c) => (cluster = c));
  beforeAll(async () => {
    const kafka = new Kafka({ brokers: [cluster.kafka.brokers], logLevel: logLevel.NOTHING });
    const consumer = kafka.consumer({ groupId: `identity-audit-${randomUUID()}` });
    await consumer.connect();
    await consumer.subscribe({ topic: `${cluster.kafkaPrefix}audit`, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void audit.push(JSON.parse(message.value!.toString()) as Json) });
    stopConsumer = () => consumer.disconnect();
  }, 240_000);
  afterAll(async () => {
    await stopConsumer?.();
  }, 120_000);

  it('tracked operations of the gateway reach the audit topic on Kafka, failures included', async () => {
    const created = await ok(await call('/api/v1/api-key', { method: 'POST', json: { description: 'cluster' } }));
    expect((await call('/api/v1/sessions', { key: created.key as string })).status).toBe(200);
    expect((await call('/api/v1/api-key', { method: 'POST', json: { expires_at: 'never' } })).status).toBe(422);
    const seen = await eventually(
      async () => audit.filter((r) => r.operation === 'create_api_key'),
      (list) => list.some((r) => r.status === 'Success') && list.some((r) => r.status === 'Failure'),
      30_000,
    );
    expect(seen.find((r) => r.status === 'Success')).toMatchObject({ service: 'gateway', resources: [{ type: 'api_key', id: created.id }] });
  });

  it('ingest, a separate process, enforces the usage limit and retention carried in the signed identity', async () => {
    const ws = await ok(await call('/api/v1/workspaces', { method: 'POST', json: { name: 'cluster-limited' } }));
    const sk = await ok(await call('/api/v1/service-keys', { method: 'POST', json: { workspace_id: ws.id } }));
    const key = sk.key as string;
    await ok(await call('/api/v1/usage-limits', { method: 'PUT', key, json: { limit_type: 'monthly_traces', limit_value: 1 } }));
    await ok(await call('/api/v1/workspaces/current/ttl-settings', { method: 'PUT', key, json: { shortlived_days: 14 } }));
    const old = new Date(Date.now() - 30 * DAY).toISOString();
    const [expired, kept] = [randomUUID(), randomUUID()];
    const batch = {
      post: [
        { id: expired, trace_id: expired, name: 'short', run_type: 'chain', start_time: old, inputs: {}, session_name: 'cluster-retention', trace_tier: 'shortlived' },
        { id: kept, trace_id: expired, parent_run_id: expired, name: 'child', run_type: 'chain', start_time: old, inputs: {}, session_name: 'cluster-retention', trace_tier: 'longlived' },
      ],
      patch: [],
    };
    expect((await call('/api/v1/runs/batch', { method: 'POST', key, json: batch })).status).toBe(202);
    const refused = await call('/api/v1/runs', { method: 'POST', key, json: { id: randomUUID(), name: 'over', run_type: 'chain', inputs: {} } });
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as Json).detail).toMatch(/monthly_traces limit is 1/);
    // The longlived child has no retention set (kept), the shortlived root was past its 14 days when written.
    await eventually(
      () => call(`/api/v1/runs/${kept}`, { key }).then((r) => r.status),
      (s) => s === 200,
    );
    expect((await call(`/api/v1/runs/${expired}`, { key })).status).toBe(404);
  });
});
