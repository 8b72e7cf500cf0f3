import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import * as tar from 'tar';
import { CONTROL_PLANE_DATA_SOURCE } from '@th/control-plane';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

// The deployment address (the control plane's front proxy) in front of a real agent server started by the local
// driver (`node scripts/run.js agent-server`: `npm run build` first), as a client of a deployment reaches it.
type Json = Record<string, any>;

jest.setTimeout(240_000);

/** Answers with the serving process and its GREETING secret; "sleep:<ms>" first waits, ended early by a cancel. */
const GRAPH_JS = `'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
const last = (s) => { const m = s.messages[s.messages.length - 1]; return typeof m.content === 'string' ? m.content : JSON.stringify(m.content); };
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  const t = setTimeout(resolve, ms);
  if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(new Error('aborted')); }, { once: true });
});
const graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', async (s, config) => {
    const m = /^sleep:(\\d+)/.exec(last(s));
    if (m) await sleep(Number(m[1]), config && config.signal);
    return { messages: [{ role: 'assistant', content: 'pid=' + process.pid + ' greeting=' + (process.env.GREETING || '') }] };
  })
  .addEdge(START, 'echo').addEdge('echo', END).compile();
module.exports = { graph };
`;

async function tarball(): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'addr-src-'));
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
  writeFileSync(join(dir, 'graph.js'), GRAPH_JS);
  const file = join(dir, 'source.tar.gz');
  await tar.c({ gzip: true, cwd: dir, file }, ['langgraph.json', 'graph.js']);
  const data = readFileSync(file);
  rmSync(dir, { recursive: true, force: true });
  return data;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TERMINAL_RUN = ['success', 'error', 'timeout', 'interrupted'];

/**
 * Server-side connections of a revision's server: connected unix sockets (St 03) accepted on its socket, as this
 * machine's /proc/net/unix lists them (the control plane made the socket, so they are in the host's namespace,
 * under the name the socket was bound to: the path with a suffix).
 */
function connectedTo(socketPath: string): number {
  return readFileSync('/proc/net/unix', 'utf8')
    .split('\n')
    .slice(1)
    .filter((line) => {
      const f = line.trim().split(/\s+/);
      return f.length >= 8 && f[5] === '03' && f[7].startsWith(socketPath);
    }).length;
}

/** Opens a raw HTTP/1.1 request and resolves once the response's status line and headers have arrived. */
function openStream(port: number, path: string, key: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Api-Key: ${key}\r\nAccept: text/event-stream\r\n\r\n`));
    let head = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no response headers for ${path}`));
    }, 10_000);
    s.on('data', (b: Buffer) => {
      head += b.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        clearTimeout(timer);
        s.removeAllListeners('data');
        if (!head.startsWith('HTTP/1.1 200')) reject(new Error(head.split('\r\n')[0]));
        else resolve(s);
      }
    });
    s.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

describe('the deployment address passes disconnects and always reaches the active revision', () => {
  let svc: TestStandalone;
  let dep: Json;
  let url: string;
  let frontPort: number;

  const post = (path: string, body: unknown, signal?: AbortSignal) =>
    fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': svc.apiKey }, body: JSON.stringify(body), signal });
  const get = (path: string) => fetch(`${url}${path}`, { headers: { 'x-api-key': svc.apiKey } });
  const input = (text: string) => ({ messages: [{ role: 'user', content: text }] });

  async function pollRevision(revisionId: string): Promise<Json> {
    for (let i = 0; i < 1200; i++) {
      const rev = (await (await svc.api(`/v2/deployments/${dep.id}/revisions/${revisionId}`)).json()) as Json;
      if (['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED', 'REPLACED'].includes(rev.status)) return rev;
      await sleep(250);
    }
    throw new Error(`revision ${revisionId} never ended its rollout`);
  }

  /** The agent server's socket of a revision, as the local driver recorded it. */
  async function serverSocket(revisionId: string): Promise<string> {
    const ds = svc.app.get<DataSource>(CONTROL_PLANE_DATA_SOURCE, { strict: false });
    const [row] = (await ds.query(`SELECT runtime FROM control_plane.deployments WHERE id = $1`, [dep.id])) as { runtime: Json }[];
    return row.runtime.servers[revisionId].socket as string;
  }

  async function runStatus(threadId: string, runId: string, withinMs: number): Promise<string> {
    const deadline = Date.now() + withinMs;
    let status = '';
    while (Date.now() < deadline) {
      status = ((await (await get(`/threads/${threadId}/runs/${runId}`)).json()) as Json).status as string;
      if (TERMINAL_RUN.includes(status)) return status;
      await sleep(200);
    }
    return status;
  }

  async function newThread(): Promise<string> {
    const t = await post('/threads', {});
    expect(t.status).toBe(200);
    return ((await t.json()) as Json).thread_id as string;
  }

  beforeAll(async () => {
    svc = await startTestStandalone({ CONTROL_PLANE_INSTALLATION: 'cloud', ROLLOUT_POLL_MS: '200', DEPLOY_TIMEOUT_MS: '90000' });
    const res = await svc.api('/v2/deployments', {
      method: 'POST',
      json: { name: `addr-${randomUUID().slice(0, 8)}`, source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [{ name: 'GREETING', value: 'first' }] },
    });
    expect(res.status).toBe(201);
    dep = (await res.json()) as Json;
    const { object_path, upload_url } = (await (await svc.api(`/deployments/${dep.id}/upload-url`, { method: 'POST' })).json()) as Json;
    const put = await fetch(upload_url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: await tarball() });
    expect(put.status).toBe(200);
    const patched = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: object_path } } })).json()) as Json;
    const rev = await pollRevision(patched.latest_revision_id);
    expect(rev.status + ': ' + rev.status_message).toMatch(/^DEPLOYED/);
    dep = (await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json;
    url = dep.source_config.custom_url as string;
    frontPort = Number(new URL(url).port);
  });

  afterAll(async () => {
    if (svc && dep) {
      await svc.api(`/v2/deployments/${dep.id}`, { method: 'DELETE' });
      for (let i = 0; i < 300 && (await svc.api(`/v2/deployments/${dep.id}`)).status !== 404; i++) await sleep(100);
    }
    await svc?.close();
  });

  it('uploads accept any Content-Type, or none, as raw bytes', async () => {
    const data = await tarball();
    // {}: Node's fetch sends a Buffer body with no Content-Type, as `curl -T` does.
    for (const headers of [{}, { 'content-type': 'application/octet-stream' }, { 'content-type': 'application/gzip' }, { 'content-type': 'application/json' }] as Record<string, string>[]) {
      const { upload_url, object_path } = (await (await svc.api(`/deployments/${dep.id}/upload-url`, { method: 'POST' })).json()) as Json;
      const put = await fetch(upload_url, { method: 'PUT', headers, body: data });
      expect([headers['content-type'] ?? 'none', put.status]).toEqual([headers['content-type'] ?? 'none', 200]);
      expect(await put.json()).toEqual({ object_path });
    }
  });

  it('a client leaving a run stream with on_disconnect "cancel" cancels the run', async () => {
    const threadId = await newThread();
    const abort = new AbortController();
    const res = await post(`/threads/${threadId}/runs/stream`, { assistant_id: 'echo', input: input('sleep:30000'), on_disconnect: 'cancel', stream_mode: ['values'] }, abort.signal);
    expect(res.status).toBe(200);
    const runId = /\/runs\/([0-9a-f-]{36})/.exec(res.headers.get('content-location') ?? '')?.[1] as string;
    expect(runId).toBeDefined();
    const reader = res.body!.getReader();
    await reader.read(); // the metadata event: the run is under way
    expect(await runStatus(threadId, runId, 500)).toBe('running');
    abort.abort();
    expect(await runStatus(threadId, runId, 10_000)).toBe('interrupted');
  });

  it('a client leaving runs/wait with on_disconnect "cancel" cancels the run', async () => {
    const threadId = await newThread();
    const abort = new AbortController();
    const waiting = post(`/threads/${threadId}/runs/wait`, { assistant_id: 'echo', input: input('sleep:30000'), on_disconnect: 'cancel' }, abort.signal).catch((err: Error) => err);
    let runs: Json[] = [];
    for (let i = 0; i < 50 && !runs.some((r) => r.status === 'running'); i++) {
      await sleep(100);
      runs = (await (await get(`/threads/${threadId}/runs`)).json()) as Json[];
    }
    expect(runs.map((r) => r.status)).toEqual(['running']);
    abort.abort();
    expect(await waiting).toMatchObject({ name: 'AbortError' });
    expect(await runStatus(threadId, runs[0].run_id as string, 10_000)).toBe('interrupted');
  });

  it('100 abandoned thread streams: the address still answers at once and their upstream connections are closed', async () => {
    const threadId = await newThread();
    const upstream = await serverSocket(dep.active_revision_id as string);
    const before = connectedTo(upstream);
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < 100; i++) sockets.push(await openStream(frontPort, `/threads/${threadId}/stream`, svc.apiKey));
      expect(connectedTo(upstream)).toBeGreaterThanOrEqual(100);
    } finally {
      for (const s of sockets) s.destroy();
    }
    const t0 = Date.now();
    const ok = await fetch(`${url}/ok`, { signal: AbortSignal.timeout(5000) });
    expect(ok.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2000); // the machine may be busy: before, it never answered
    let open = connectedTo(upstream);
    for (let i = 0; i < 50 && open > before + 2; i++) {
      await sleep(100);
      open = connectedTo(upstream);
    }
    expect(open).toBeLessThanOrEqual(before + 2); // at most a kept-alive connection or two of the pool
  });

  it('after a secrets PATCH is DEPLOYED, every request reaches the new revision, even while a client holds a stream on the old one', async () => {
    const threadId = await newThread();
    const held = await openStream(frontPort, `/threads/${threadId}/stream`, svc.apiKey);
    try {
      const first = (await (await post('/runs/wait', { assistant_id: 'echo', input: input('hi') })).json()) as Json;
      expect(first.messages[1].content).toMatch(/greeting=first$/);
      const patched = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { secrets: [{ name: 'GREETING', value: 'second' }] } })).json()) as Json;
      expect((await pollRevision(patched.latest_revision_id)).status).toBe('DEPLOYED');
      const answers: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = (await (await post('/runs/wait', { assistant_id: 'echo', input: input(`n${i}`) })).json()) as Json;
        answers.push(r.messages[1].content as string);
      }
      expect(answers.filter((a) => a.endsWith('greeting=second')).length).toBe(20);
      expect(new Set(answers).size).toBe(1); // one process served them all
    } finally {
      held.destroy();
    }
  });
});
