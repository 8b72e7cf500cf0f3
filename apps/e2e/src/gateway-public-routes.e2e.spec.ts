import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { startAppProcess, startCluster, type AppProcess, type Cluster } from '@th/testing';
import { api, type Json } from './cluster-client';

/**
 * The cluster gateway's routes without an API key: dataset share reads (query, by share token), the
 * upload PUT and the push webhook (control plane, by the issued object path and by the HMAC signature).
 * The gateway forwards them with no identity header and still counts them (by client IP, in Redis);
 * everything else still needs a key. Needs `npm run build`.
 */
describe('cluster gateway: public pass-through routes', () => {
  const work = mkdtempSync(join(tmpdir(), 'th-gw-public-'));
  let cluster: Cluster;
  let controlPlane: AppProcess;
  let gateway: AppProcess;
  let call: ReturnType<typeof api>;

  beforeAll(async () => {
    // The worker's broker: this suite stops no broker, and keeps to topics of its own (its KAFKA_PREFIX in cluster.env).
    cluster = await startCluster({ sharedKafka: true });
    controlPlane = await startAppProcess('control-plane', {
      ...cluster.env,
      CONTROL_PLANE_INSTALLATION: 'cloud',
      DATA_DIR: join(work, 'data'),
    });
    // A gateway that also fronts the control plane, with its rate limits on (counters in the machine's Redis).
    gateway = await startAppProcess('gateway', {
      ...cluster.env,
      BOOTSTRAP_API_KEY: cluster.apiKey,
      CONTROL_PLANE_URL: controlPlane.url,
      RATE_LIMIT_ENABLED: 'true',
      REDIS_URL: 'redis://127.0.0.1:6379',
      RATE_LIMIT_KEY_PREFIX: `th:test:gwpub:${randomBytes(4).toString('hex')}:`,
    });
    call = api(gateway.url, cluster.apiKey);
  }, 300_000);
  afterAll(async () => {
    await gateway?.stop();
    await controlPlane?.stop();
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
  }, 120_000);

  const anonymous = (path: string, init: RequestInit = {}) => fetch(`${gateway.url}${path}`, init);

  it('a shared dataset is readable through the gateway by its token alone, and only while shared', async () => {
    const created = await call('/api/v1/datasets', { method: 'POST', json: { name: `shared-${randomUUID()}` } });
    expect(created.status).toBe(200);
    const dataset = (await created.json()) as Json;
    const ex = await call('/api/v1/examples', { method: 'POST', json: { dataset_id: dataset.id, inputs: { q: 'two plus two' }, outputs: { a: 4 } } });
    expect(ex.status).toBe(200);

    // Not shared yet: the token does not exist (query's answer, not the gateway's 401).
    const unknown = await anonymous(`/api/v1/public/${randomUUID()}/datasets`);
    expect(unknown.status).toBe(404);
    const shared = await call(`/api/v1/datasets/${dataset.id}/share`, { method: 'PUT' });
    expect(shared.status).toBe(200);
    const { share_token } = (await shared.json()) as Json;
    expect(typeof share_token).toBe('string');

    const read = await anonymous(`/api/v1/public/${share_token}/datasets`);
    expect(read.status).toBe(200);
    expect(((await read.json()) as Json).id).toBe(dataset.id);
    // Still rate-limited: the limiter's headers are on the public answer too.
    expect(Number(read.headers.get('ratelimit-limit'))).toBeGreaterThan(0);
    expect(read.headers.get('ratelimit-remaining')).not.toBeNull();
    const examples = await anonymous(`/public/${share_token}/examples`);
    expect(examples.status).toBe(200);
    const rows = (await examples.json()) as Json[];
    expect(rows.map((r) => r.inputs)).toEqual([{ q: 'two plus two' }]);

    // A malformed token is the service's 422; a forged identity header is dropped, not trusted.
    const bad = await anonymous('/api/v1/public/not-a-token/datasets');
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: string[] }[] }).detail[0].loc).toEqual(['path', 'share_token']);
    const forged = await anonymous('/api/v1/datasets', { headers: { 'x-th-identity': 'forged.token' } });
    expect(forged.status).toBe(401);
    // The dataset routes themselves still need a key.
    expect((await anonymous(`/api/v1/datasets/${dataset.id}`)).status).toBe(401);
    expect((await anonymous(`/api/v1/datasets/${dataset.id}/share`, { method: 'PUT' })).status).toBe(401);

    expect((await call(`/api/v1/datasets/${dataset.id}/share`, { method: 'DELETE' })).status).toBe(200);
    expect((await anonymous(`/api/v1/public/${share_token}/datasets`)).status).toBe(404);
    expect((await anonymous(`/api/v1/public/${share_token}/examples`)).status).toBe(404);
  });

  const tarball = async (): Promise<Buffer> => {
    const dir = mkdtempSync(join(work, 'src-'));
    writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
    writeFileSync(join(dir, 'graph.js'), 'module.exports.graph = null;\n');
    const file = join(work, `${randomUUID()}.tar.gz`);
    await tar.c({ gzip: true, cwd: dir, file }, ['langgraph.json', 'graph.js']);
    return readFileSync(file);
  };

  it('an upload URL issued through the gateway points at the gateway, and the PUT works there without a key', async () => {
    const res = await call('/v2/deployments', {
      method: 'POST',
      json: { name: `upload-${randomBytes(3).toString('hex')}`, source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] },
    });
    expect(res.status).toBe(201);
    const dep = (await res.json()) as Json;
    expect((await anonymous(`/deployments/${dep.id}/upload-url`, { method: 'POST' })).status).toBe(401);
    const issued = await call(`/deployments/${dep.id}/upload-url`, { method: 'POST' });
    expect(issued.status).toBe(200);
    const { upload_url, object_path } = (await issued.json()) as { upload_url: string; object_path: string };
    expect(upload_url).toBe(`${gateway.url}/v2/uploads/${object_path}`);

    const put = (url: string, body: Buffer) => fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body });
    // The service authenticates by the issued path: an invented one is refused, and so is a body that is not a tarball.
    expect((await put(upload_url.replace(/[0-9a-f]{32}\.tar\.gz$/, `${'0'.repeat(32)}.tar.gz`), await tarball())).status).toBe(404);
    expect((await put(upload_url, Buffer.from('not gzip'))).status).toBe(400);
    // Named before it was uploaded: refused.
    const early = await call(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: object_path } } });
    expect(early.status).toBe(422);

    const ok = await put(upload_url, await tarball());
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ object_path });
    expect(Number(ok.headers.get('ratelimit-limit'))).toBeGreaterThan(0);
    // Stored: the deployment may now name it.
    const named = await call(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: object_path } } });
    expect(named.status).toBe(200);
    expect((((await named.json()) as Json).source_revision_config as Json).source_tarball_path).toBe(object_path);
  });

  it('a push webhook reaches the control plane without a key and is authenticated there by its signature', async () => {
    const inst = await call('/v1/integrations/git_host/install');
    expect(inst.status).toBe(200);
    const { integration_id, webhook_secret } = (await inst.json()) as { integration_id: string; webhook_secret: string };
    const body = JSON.stringify({ ref: 'refs/heads/nothing-deploys-this', repository: { clone_url: '/tmp/none' } });
    const hook = (signature: string | null) =>
      anonymous(`/v1/integrations/git_host/${integration_id}/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(signature ? { 'x-hub-signature-256': signature } : {}) },
        body,
      });
    const unsigned = await hook(null);
    expect(unsigned.status).toBe(401);
    expect(((await unsigned.json()) as Json).detail).toBe('Invalid webhook signature');
    expect((await hook(`sha256=${'0'.repeat(64)}`)).status).toBe(401);
    const signed = await hook(`sha256=${createHmac('sha256', webhook_secret).update(body).digest('hex')}`);
    expect(signed.status).toBe(200);
    expect(await signed.json()).toEqual({ revisions: [] });
    // The install route next to it still needs a key.
    expect((await anonymous('/v1/integrations/git_host/install')).status).toBe(401);
  });
});
