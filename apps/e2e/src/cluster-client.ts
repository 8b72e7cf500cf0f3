import { randomUUID } from 'node:crypto';
import { sharedCluster, startCluster, type Cluster, type SharedCluster } from '@th/testing';
import { dottedSegment as seg } from '@th/ingest';

export { seg };

export type Json = Record<string, unknown>;


export function api(base: string, key: string) {
  return (path: string, init: RequestInit & { json?: unknown } = {}) => {
    const headers = new Headers(init.headers);
    headers.set('x-api-key', key);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return fetch(`${base}${path}`, { ...init, headers, body });
  };
}

/** A root run with a post and a matching patch, as the SDK would send them. */
export function makeRun(project: string, i: number): { id: string; post: Json; patch: Json } {
  const id = randomUUID();
  const start = new Date(Date.UTC(2026, 10, 22, 8, 0, 0) + i).toISOString().replace('Z', '001Z');
  const order = seg(start, id);
  return {
    id,
    post: { id, name: `run-${i}`, run_type: 'chain', start_time: start, trace_id: id, dotted_order: order, session_name: project, inputs: { i } },
    patch: { id, trace_id: id, dotted_order: order, session_name: project, end_time: Date.UTC(2026, 10, 22, 8, 0, 1) + i, outputs: { o: i } },
  };
}

/** Polls until `check` passes or the deadline is reached (bounded loop). */
export async function eventually<T>(fn: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 60_000, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await fn();
  while (!check(last)) {
    if (Date.now() > deadline) return last;
    await new Promise((r) => setTimeout(r, everyMs));
    last = await fn();
  }
  return last;
}

/** Every listed run id with its status, read through the public API in pages. */
export async function readRuns(call: ReturnType<typeof api>, ids: string[]): Promise<Map<string, Json[]>> {
  const found = new Map<string, Json[]>();
  for (let i = 0; i < ids.length; i += 500) {
    const res = await call('/api/v1/runs/query', { method: 'POST', json: { id: ids.slice(i, i + 500), limit: 1000, select: ['id', 'status', 'outputs'] } });
    if (res.status !== 200) throw new Error(`query failed ${res.status}: ${await res.text()}`);
    for (const r of ((await res.json()) as { runs: Json[] }).runs) {
      const list = found.get(r.id as string) ?? [];
      list.push(r);
      found.set(r.id as string, list);
    }
  }
  return found;
}

/**
 * Starts a cluster (separate processes) for the enclosing describe block and stops it afterwards;
 * `ready` receives the cluster and a caller of its gateway with the bootstrap key.
 */
export function useCluster(ready: (cluster: Cluster, call: ReturnType<typeof api>) => void, opts?: Parameters<typeof startCluster>[0]): void {
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster(opts);
    ready(cluster, api(cluster.gateway.url, cluster.apiKey));
  }, 240_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);
}

/** A suite's view of its worker's shared cluster: a workspace of its own and a service key for it. */
export interface SuiteCluster extends SharedCluster {
  apiKey: string;
  workspaceId: string;
}

/**
 * For suites that stop, kill and reconfigure nothing: the jest worker's shared cluster (sharedCluster, started by
 * the first such suite and reused by the next), with a fresh workspace and an organization admin's service key for
 * it, so no suite sees another's projects, runs, datasets or workspace settings. `ready` receives it and a caller of its gateway with that key.
 */
export function useSharedCluster(ready: (cluster: SuiteCluster, call: ReturnType<typeof api>) => void): void {
  beforeAll(async () => {
    const shared = await sharedCluster();
    const admin = api(shared.gateway.url, shared.bootstrapApiKey);
    const ok = async (res: Response): Promise<Json> => {
      const text = await res.text();
      if (res.status !== 200) throw new Error(`shared cluster: ${res.url} answered ${res.status}: ${text}`);
      return JSON.parse(text) as Json;
    };
    const workspace = await ok(await admin('/api/v1/workspaces', { method: 'POST', json: { name: `suite-${randomUUID()}` } }));
    // The bootstrap key's role, so the suite may do what it could with a cluster of its own (audit logs, workspaces, org keys).
    const roles = (await ok(await admin('/api/v1/orgs/current/roles'))) as unknown as Json[];
    const orgAdmin = roles.find((r) => r.name === 'Organization Admin');
    if (orgAdmin === undefined) throw new Error('shared cluster: no Organization Admin role');
    const key = await ok(
      await admin('/api/v1/service-keys', { method: 'POST', json: { workspace_id: workspace.id, role_id: orgAdmin.id, description: 'a suite of the shared cluster' } }),
    );
    const cluster: SuiteCluster = { ...shared, apiKey: key.key as string, workspaceId: workspace.id as string };
    ready(cluster, api(cluster.gateway.url, cluster.apiKey));
  }, 240_000);
}
