import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { EventBus } from '@th/bus';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { IdentityService } from '@th/gateway';
import { dottedSegment as seg } from '@th/ingest';
import { createTestDatabase, startS3Server, type S3Server } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

const BUCKET = 'th-exports';

/** Bounded wait for a condition polled through the API. */
async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 60_000, show?: () => Promise<unknown>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 10_000; i++) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Timed out waiting for ${what}${show ? `; last seen: ${JSON.stringify(await show())}` : ''}`);
}

describe('bulk export to S3 as Parquet, through HTTP', () => {
  let s3: S3Server;
  let svc: TestStandalone;
  let db: { url: string; drop(): Promise<void> };
  let projectId: string;
  const audit: AuditRecord[] = [];
  const ids: Record<string, string> = {};

  const destinationBody = (over: Json = {}, creds: Json = {}, config: Json = {}) => ({
    destination_type: 's3',
    display_name: 'test bucket',
    config: { bucket_name: BUCKET, prefix: 'exports/th', region: 'us-east-1', endpoint_url: s3.endpoint, ...config },
    credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey, ...creds },
    ...over,
  });
  const json = async (res: Response): Promise<Json> => (await res.json()) as Json;
  const getExport = async (id: string): Promise<Json> => json(await svc.api(`/api/v1/bulk-exports/${id}`));
  const finished = (id: string) =>
    until(
      `export ${id} to finish`,
      async () => {
        const e = await getExport(id);
        return ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEDOUT'].includes(e.status as string) ? e : null;
      },
      60_000,
      () => getExport(id),
    );
  /** The Parquet files of an export, read back by ClickHouse's own Parquet reader (chDB `file()`), not parquetjs. */
  const readParquet = async (keys: string[], columns: string): Promise<Json[]> => {
    const out: Json[] = [];
    for (const k of keys) out.push(...(await svc.ch.query<Json>(`SELECT ${columns} FROM file({path:String}, Parquet) SETTINGS use_hive_partitioning = 0`, { path: s3.objectPath(BUCKET, k) })));
    return out;
  };
  const parquetKeys = (exportId: string) => s3.listKeys(BUCKET, `exports/th/export_id=${exportId}/`).filter((k) => k.endsWith('.parquet'));

  beforeAll(async () => {
    s3 = await startS3Server();
    s3.createBucket(BUCKET);
    db = await createTestDatabase();
    // The test S3 server is on 127.0.0.1: the outbound policy refuses it unless the operator lists it.
    svc = await startTestStandalone({ DATABASE_URL: db.url, EXPORT_POLL_MS: '200', EXPORT_RETRY_DELAY_MS: '200', OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: 'bulk-export-test' }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
    const created = await svc.api('/api/v1/sessions', { method: 'POST', json: { name: `export-${randomUUID()}` } });
    expect(created.status).toBe(200);
    projectId = (await json(created)).id as string;

    // Window of the one-time exports: [2026-11-18T00:00:00Z, 2026-11-20T00:00:00Z).
    const times: Record<string, string> = {
      before: '2026-11-17T23:59:59.999999Z',
      atStart: '2026-11-18T00:00:00.000000Z',
      day1: '2026-11-18T12:30:00.123456Z',
      day2: '2026-11-19T08:00:00.000001Z',
      last: '2026-11-19T23:59:59.999999Z',
      atEnd: '2026-11-20T00:00:00.000000Z',
    };
    const post: Json[] = [];
    for (const [name, t] of Object.entries(times)) {
      const root = randomUUID();
      const child = randomUUID();
      ids[name] = root;
      ids[`${name}Child`] = child;
      const tc = t.replace(/\.\d{6}Z$/, (m) => (name === 'last' || name === 'before' ? m : m.replace(/^\.\d/, '.5')));
      post.push({
        id: root,
        name: `root-${name}`,
        run_type: 'chain',
        start_time: t,
        end_time: name === 'day2' ? undefined : t,
        trace_id: root,
        dotted_order: seg(t, root),
        session_id: projectId,
        inputs: { question: `q-${name}`, nested: { list: [1, 2, 3] } },
        outputs: { answer: `a-${name}` },
        tags: ['export', name],
        extra: { metadata: { which: name } },
      });
      post.push({
        id: child,
        name: 'ChatModel',
        run_type: 'llm',
        start_time: tc,
        end_time: tc,
        trace_id: root,
        parent_run_id: root,
        dotted_order: `${seg(t, root)}.${seg(tc, child)}`,
        session_id: projectId,
        inputs: { messages: ['hi'] },
        outputs: { usage_metadata: { input_tokens: 10, output_tokens: 5, input_cost: 0.001, output_cost: 0.002 } },
      });
    }
    expect((await svc.api('/api/v1/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
    // A second version of one run: only the newest may be exported.
    const t = times.day2;
    const patch = { trace_id: ids.day2, dotted_order: seg(t, ids.day2), end_time: '2026-11-19T08:00:05.000001Z', outputs: { answer: 'patched' } };
    expect((await svc.api(`/api/v1/runs/${ids.day2}`, { method: 'PATCH', json: patch })).status).toBe(202);
  });

  afterAll(async () => {
    await svc?.close();
    await db?.drop();
    await s3?.stop();
  });

  describe('destinations', () => {
    it('validates by writing to the bucket, stores credentials encrypted and never returns them', async () => {
      const res = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody() });
      expect(res.status).toBe(200);
      const dest = await json(res);
      expect(dest).toMatchObject({
        destination_type: 's3',
        display_name: 'test bucket',
        config: { bucket_name: BUCKET, prefix: 'exports/th', region: 'us-east-1', endpoint_url: s3.endpoint },
        credentials_keys: ['access_key_id', 'secret_access_key'],
      });
      expect(JSON.stringify(dest)).not.toContain(s3.secretAccessKey);
      // the check object was removed again
      expect(s3.listKeys(BUCKET).filter((k) => k.includes('write-check'))).toEqual([]);
      const got = await svc.api(`/api/v1/bulk-exports/destinations/${dest.id as string}`);
      expect(got.status).toBe(200);
      expect(await json(got)).toEqual(dest);
      const list = (await (await svc.api('/api/v1/bulk-exports/destinations')).json()) as Json[];
      expect(list.map((d) => d.id)).toContain(dest.id);

      const pg = new Client({ connectionString: db.url });
      await pg.connect();
      try {
        const row = (await pg.query(`SELECT credentials_enc FROM exports.destinations WHERE id = $1`, [dest.id])).rows[0] as { credentials_enc: string };
        expect(row.credentials_enc.startsWith('v1.')).toBe(true);
        expect(row.credentials_enc).not.toContain(s3.secretAccessKey);
        expect(row.credentials_enc).not.toContain(s3.accessKeyId);
      } finally {
        await pg.end();
      }
      const ops = audit.filter((a) => a.operation === 'create_bulk_export_destination' && a.status === 'Success');
      expect(ops.some((a) => a.resources.some((r) => r.id === dest.id))).toBe(true);
      expect(audit.some((a) => a.operation === 'read_bulk_export_destination' && a.resources.some((r) => r.id === dest.id))).toBe(true);
    });

    it('accepts the neutral destination type objstore', async () => {
      const res = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({ destination_type: 'objstore' }) });
      expect(res.status).toBe(200);
      expect((await json(res)).destination_type).toBe('objstore');
    });

    it('fails creation with a message saying what failed, and saves nothing', async () => {
      const before = ((await (await svc.api('/api/v1/bulk-exports/destinations?limit=1000')).json()) as Json[]).length;
      const wrongSecret = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, { secret_access_key: 'not-the-secret' }) });
      expect(wrongSecret.status).toBe(400);
      expect((await json(wrongSecret)).detail).toMatch(/access denied/i);
      const wrongKey = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, { access_key_id: 'AKNOBODY' }) });
      expect(wrongKey.status).toBe(400);
      expect((await json(wrongKey)).detail).toMatch(/access denied/i);
      const missing = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, {}, { bucket_name: 'no-such-bucket' }) });
      expect(missing.status).toBe(400);
      expect((await json(missing)).detail).toMatch(/bucket 'no-such-bucket' does not exist/);
      const unreachable = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, {}, { endpoint_url: 'http://127.0.0.1:1' }) });
      expect(unreachable.status).toBe(400);
      expect((await json(unreachable)).detail).toBe('Destination validation failed: could not reach the destination');
      const invalid = await svc.api('/api/v1/bulk-exports/destinations', {
        method: 'POST',
        json: { destination_type: 'gcs', display_name: '', config: { bucket_name: 'A' }, credentials: {} },
      });
      expect(invalid.status).toBe(422);
      const locs = ((await json(invalid)).detail as { loc: string[] }[]).map((d) => d.loc.join('.'));
      expect(locs).toEqual(expect.arrayContaining(['body.destination_type', 'body.display_name', 'body.config.bucket_name', 'body.credentials.access_key_id']));
      const after = ((await (await svc.api('/api/v1/bulk-exports/destinations?limit=1000')).json()) as Json[]).length;
      expect(after).toBe(before);
      expect(audit.some((a) => a.operation === 'create_bulk_export_destination' && a.status === 'Failure')).toBe(true);
    });

    it('refuses endpoints on loopback, private, link-local or metadata addresses that the allow-list does not name (422 on body.config.endpoint_url), before connecting', async () => {
      const before = ((await (await svc.api('/api/v1/bulk-exports/destinations?limit=1000')).json()) as Json[]).length;
      const port = new URL(s3.endpoint).port;
      // [::1] and localhost (whose name is refused as such) reach the same S3 server as 127.0.0.1, but only 127.0.0.1 is listed.
      for (const endpoint_url of ['http://169.254.169.254/', 'http://10.0.0.1:9000', 'http://192.168.0.10/', 'http://100.64.0.1/', `http://[::1]:${port}`, `http://localhost:${port}`, 'http://[::ffff:a9fe:a9fe]/', 'http://0xa9fea9fe/', 'http://2852039166/']) {
        const res = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, {}, { endpoint_url }) });
        expect({ endpoint_url, status: res.status }).toEqual({ endpoint_url, status: 422 });
        const detail = (await json(res)).detail as { loc: string[]; msg: string; type: string }[];
        expect(detail).toEqual([{ loc: ['body', 'config', 'endpoint_url'], msg: expect.stringMatching(/^endpoint_url points to an address this service does not call/), type: 'value_error' }]);
      }
      const ok = (await json(await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody() }))) as Json;
      const patched = await svc.api(`/api/v1/bulk-exports/destinations/${ok.id as string}`, { method: 'PATCH', json: { config: { endpoint_url: 'http://169.254.169.254/' } } });
      expect(patched.status).toBe(422);
      expect(((await json(patched)).detail as { loc: string[] }[]).map((d) => d.loc)).toEqual([['body', 'config', 'endpoint_url']]);
      expect(((await json(await svc.api(`/api/v1/bulk-exports/destinations/${ok.id as string}`))).config as Json).endpoint_url).toBe(s3.endpoint);
      const after = ((await (await svc.api('/api/v1/bulk-exports/destinations?limit=1000')).json()) as Json[]).length;
      expect(after).toBe(before + 1);
    });

    it('answers the same for a closed port, a port that resets and a name that does not resolve (no port scanning through the check)', async () => {
      const resetter = createServer((socket) => socket.destroy());
      await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
      try {
        const answers: Json[] = [];
        for (const endpoint_url of ['http://127.0.0.1:1', `http://127.0.0.1:${(resetter.address() as AddressInfo).port}`, 'http://no-such-host.invalid']) {
          const res = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, {}, { endpoint_url }) });
          answers.push({ status: res.status, body: await json(res) });
        }
        expect(answers).toEqual(new Array(3).fill({ status: 400, body: { detail: 'Destination validation failed: could not reach the destination' } }));
      } finally {
        await new Promise((resolve) => resetter.close(resolve));
      }
    });

    it('updates a destination, validating changed credentials; a failed update changes nothing', async () => {
      const dest = await json(await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({ display_name: 'before' }) }));
      const renamed = await svc.api(`/api/v1/bulk-exports/destinations/${dest.id as string}`, { method: 'PATCH', json: { display_name: 'after', config: { prefix: 'other' } } });
      expect(renamed.status).toBe(200);
      expect(await json(renamed)).toMatchObject({ display_name: 'after', config: { prefix: 'other', bucket_name: BUCKET } });
      const bad = await svc.api(`/api/v1/bulk-exports/destinations/${dest.id as string}`, {
        method: 'PATCH',
        json: { display_name: 'broken', credentials: { access_key_id: s3.accessKeyId, secret_access_key: 'wrong' } },
      });
      expect(bad.status).toBe(400);
      expect(await json(await svc.api(`/api/v1/bulk-exports/destinations/${dest.id as string}`))).toMatchObject({ display_name: 'after' });
      expect((await svc.api(`/api/v1/bulk-exports/destinations/${randomUUID()}`, { method: 'PATCH', json: { display_name: 'x' } })).status).toBe(404);
      expect((await svc.api(`/api/v1/bulk-exports/destinations/not-a-uuid`)).status).toBe(422);
      expect((await svc.api(`/api/v1/bulk-exports/destinations/${dest.id as string}`, { method: 'PATCH', json: { nope: 1 } })).status).toBe(422);
      expect(audit.some((a) => a.operation === 'update_bulk_export_destination' && a.status === 'Success' && a.resources.some((r) => r.id === dest.id))).toBe(true);
      expect(audit.some((a) => a.operation === 'update_bulk_export_destination' && a.status === 'Failure')).toBe(true);
    });

    it('requires a Plus or Enterprise plan', async () => {
      const free = await svc.app.get(IdentityService).createOrganization({ name: 'free org', plan: 'free' });
      const res = await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody(), headers: { 'x-api-key': free.api_key } });
      expect(res.status).toBe(403);
      expect((await json(res)).detail).toMatch(/Plus or Enterprise/);
      expect((await svc.api('/api/v1/bulk-exports', { headers: { 'x-api-key': free.api_key } })).status).toBe(403);
      const plus = await svc.app.get(IdentityService).createOrganization({ name: 'plus org', plan: 'plus' });
      expect((await svc.api('/api/v1/bulk-exports', { headers: { 'x-api-key': plus.api_key } })).status).toBe(200);
    });
  });

  describe('exports', () => {
    let destId: string;
    beforeAll(async () => {
      destId = (await json(await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody() }))).id as string;
    });
    const oneTime = (over: Json = {}) => ({
      bulk_export_destination_id: destId,
      session_id: projectId,
      start_time: '2026-11-18T00:00:00Z',
      end_time: '2026-11-20T00:00:00Z',
      format_version: 'v2_beta',
      ...over,
    });

    it('rejects invalid requests with 422 or 404 and creates nothing', async () => {
      const before = ((await (await svc.api('/api/v1/bulk-exports?limit=1000')).json()) as Json[]).length;
      const cases: [Json, string][] = [
        [oneTime({ export_fields: ['id', 'no_such_field'] }), 'body.export_fields.1'],
        [oneTime({ interval_hours: 2 }), 'body.end_time'],
        [oneTime({ end_time: undefined }), 'body.end_time'],
        [oneTime({ end_time: undefined, interval_hours: 0 }), 'body.interval_hours'],
        [oneTime({ end_time: undefined, interval_hours: 169 }), 'body.interval_hours'],
        [oneTime({ end_time: '2026-11-17T00:00:00Z' }), 'body.end_time'],
        [oneTime({ format_version: 'v1' }), 'body.format_version'],
        [oneTime({ session_id: 'nope' }), 'body.session_id'],
        [oneTime({ filter: 'eq(nope, 1)' }), 'body.filter'],
      ];
      for (const [body, loc] of cases) {
        const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: body });
        expect([res.status, loc]).toEqual([422, loc]);
        expect(((await json(res)).detail as { loc: string[] }[]).map((d) => d.loc.join('.'))).toContain(loc);
      }
      const unknownDest = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ bulk_export_destination_id: randomUUID() }) });
      expect(unknownDest.status).toBe(404);
      const after = ((await (await svc.api('/api/v1/bulk-exports?limit=1000')).json()) as Json[]).length;
      expect(after).toBe(before);
      expect((await svc.api(`/api/v1/bulk-exports/${randomUUID()}`)).status).toBe(404);
    });

    it('exports the newest version of every run in [start, end) exactly once, in the Hive layout, readable by ClickHouse', async () => {
      const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime() });
      expect(res.status).toBe(200);
      const created = await json(res);
      expect(created).toMatchObject({ session_id: projectId, source_bulk_export_id: null, format_version: 'v2_beta' });
      expect(['CREATED', 'RUNNING', 'COMPLETED']).toContain(created.status);
      const done = await finished(created.id as string);
      expect(done).toMatchObject({ status: 'COMPLETED', rows_written: 8, files_written: 2, error: null });

      const keys = parquetKeys(created.id as string);
      const base = `exports/th/export_id=${created.id as string}/tenant_id=${svc.workspaceId}/session_id=${projectId}/runs`;
      expect(keys).toEqual([`${base}/year=2026/month=11/day=18/part-000001.parquet`, `${base}/year=2026/month=11/day=19/part-000002.parquet`]);

      const cols = `id, tenant_id, session_id, trace_id, parent_run_id, parent_run_ids, name, run_type, toString(toUnixTimestamp64Micro(start_time)) AS st,
        toString(toUnixTimestamp64Micro(end_time)) AS et, status, is_root, dotted_order, inputs, outputs, error, extra, events, tags,
        total_tokens, prompt_tokens, completion_tokens, total_cost, prompt_cost, completion_cost, toTypeName(start_time) AS st_type, toTypeName(tags) AS tags_type`;
      const exported = await readParquet(keys, cols);
      expect(exported).toHaveLength(8);
      expect(new Set(exported.map((r) => r.id)).size).toBe(8);
      const expectedIds = ['atStart', 'day1', 'day2', 'last'].flatMap((n) => [ids[n], ids[`${n}Child`]]);
      expect(exported.map((r) => r.id).sort()).toEqual(expectedIds.sort());
      expect(exported[0].st_type).toBe("DateTime64(6, 'UTC')");
      expect(exported[0].tags_type).toBe('Array(String)');

      const stored = await svc.ch.query<Json>(
        `SELECT toString(id) AS id, toString(tenant_id) AS tenant_id, toString(session_id) AS session_id, toString(trace_id) AS trace_id,
           if(parent_run_id IS NULL, NULL, toString(parent_run_id)) AS parent_run_id, arrayMap(x -> toString(x), parent_run_ids) AS parent_run_ids,
           name, toString(run_type) AS run_type, toString(toUnixTimestamp64Micro(start_time)) AS st, toString(toUnixTimestamp64Micro(end_time)) AS et,
           toString(status) AS status, is_root, dotted_order, if(inputs = '', NULL, inputs) AS inputs, if(outputs = '', NULL, outputs) AS outputs, error,
           if(extra = '', NULL, extra) AS extra, if(events = '', NULL, events) AS events, tags, total_tokens, prompt_tokens, completion_tokens, total_cost, prompt_cost, completion_cost
         FROM (SELECT * FROM runs FINAL WHERE tenant_id = {t:UUID} AND session_id = {s:UUID} AND id IN {ids:Array(UUID)})`,
        { t: svc.workspaceId, s: projectId, ids: expectedIds },
      );
      expect(stored).toHaveLength(8);
      const byId = new Map(exported.map((r) => [r.id as string, r]));
      for (const s of stored) {
        const e = byId.get(s.id as string) as Json;
        for (const k of Object.keys(s)) expect([k, e[k]]).toEqual([k, s[k]]);
      }
      const patched = byId.get(ids.day2) as Json;
      expect(JSON.parse(patched.outputs as string)).toEqual({ answer: 'patched' });
      expect(patched.status).toBe('success');
      const llm = byId.get(ids.day1Child) as Json;
      expect(llm).toMatchObject({ total_tokens: 15, prompt_tokens: 10, completion_tokens: 5, parent_run_ids: [ids.day1], is_root: false });
      expect(JSON.parse((byId.get(ids.day1) as Json).inputs as string)).toEqual({ question: 'q-day1', nested: { list: [1, 2, 3] } });
      expect(audit.some((a) => a.operation === 'create_bulk_export' && a.status === 'Success' && a.resources.some((r) => r.id === created.id))).toBe(true);
    });

    it('writes only the requested export_fields (id always)', async () => {
      const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ export_fields: ['name', 'start_time', 'tags', 'total_tokens'] }) });
      expect(res.status).toBe(200);
      const created = await json(res);
      expect(created.export_fields).toEqual(['name', 'start_time', 'tags', 'total_tokens']);
      expect(await finished(created.id as string)).toMatchObject({ status: 'COMPLETED', rows_written: 8 });
      const keys = parquetKeys(created.id as string);
      const path = s3.objectPath(BUCKET, keys[0]);
      const described = await svc.ch.query<{ name: string; type: string }>(`DESCRIBE file({path:String}, Parquet) SETTINGS use_hive_partitioning = 0`, { path });
      expect(described.map((d) => [d.name, d.type])).toEqual([
        ['id', 'String'],
        ['name', 'String'],
        ['start_time', "DateTime64(6, 'UTC')"],
        ['tags', 'Array(String)'],
        ['total_tokens', 'Int64'],
      ]);
      // ClickHouse reads the layout as Hive partitions.
      const [hive] = await svc.ch.query<Json>(`SELECT DISTINCT export_id, tenant_id, session_id, year, month, day FROM file({path:String}, Parquet) SETTINGS use_hive_partitioning = 1`, { path });
      expect(hive).toEqual({ export_id: created.id, tenant_id: svc.workspaceId, session_id: projectId, year: 2026, month: 11, day: 18 });
    });

    it('exports only the runs the filter matches, with the run query filter language', async () => {
      const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ filter: 'eq(run_type, "llm")', export_fields: ['run_type'] }) });
      expect(res.status).toBe(200);
      const created = await json(res);
      expect(await finished(created.id as string)).toMatchObject({ status: 'COMPLETED', rows_written: 4 });
      const rows = await readParquet(parquetKeys(created.id as string), 'id, run_type');
      expect(rows.map((r) => r.id).sort()).toEqual(['atStart', 'day1', 'day2', 'last'].map((n) => ids[`${n}Child`]).sort());
      expect(new Set(rows.map((r) => r.run_type))).toEqual(new Set(['llm']));
      const tagged = await json(await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ filter: 'has(tags, "day1")', export_fields: ['name'] }) }));
      expect(await finished(tagged.id as string)).toMatchObject({ status: 'COMPLETED', rows_written: 1, files_written: 1 });
      expect((await readParquet(parquetKeys(tagged.id as string), 'id')).map((r) => r.id)).toEqual([ids.day1]);
    });

    it('completes an empty window with no files', async () => {
      const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ start_time: '2020-01-01T00:00:00Z', end_time: '2020-01-02T00:00:00Z' }) });
      const created = await json(res);
      expect(await finished(created.id as string)).toMatchObject({ status: 'COMPLETED', rows_written: 0, files_written: 0 });
      expect(parquetKeys(created.id as string)).toEqual([]);
    });

    it('retries a failing export and then marks it FAILED with the reason, without writing anything', async () => {
      s3.createBucket('th-doomed');
      const doomed = await json(await svc.api('/api/v1/bulk-exports/destinations', { method: 'POST', json: destinationBody({}, {}, { bucket_name: 'th-doomed' }) }));
      expect(doomed.id).toBeDefined();
      rmSync(join(s3.dataDir, 'th-doomed'), { recursive: true, force: true });
      const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ bulk_export_destination_id: doomed.id }) });
      expect(res.status).toBe(200);
      const failed = await finished((await json(res)).id as string);
      expect(failed).toMatchObject({ status: 'FAILED', rows_written: 0, files_written: 0 });
      expect(failed.error).toMatch(/bucket/i);
    });

    it('spawns one export per past window of a scheduled export; cancelling stops spawning and leaves spawned ones alone', async () => {
      const hour = 3_600_000;
      const start = Math.floor(Date.now() / 1000) * 1000 - 2.5 * hour;
      // Windows [start, start+1h) and [start+1h, start+2h) ended 90 and 30 minutes ago: both are due (10 minutes after
      // their end). The third ends in 30 minutes: not spawned yet, so its run is not exported.
      const post: Json[] = [];
      const runIds: string[] = [];
      for (const offset of [0.5, 1.5, 2.25]) {
        const id = randomUUID();
        runIds.push(id);
        const t = new Date(start + offset * hour).toISOString().replace('Z', '000Z');
        post.push({ id, name: `sched-${offset}`, run_type: 'chain', start_time: t, end_time: t, trace_id: id, dotted_order: seg(t, id), session_id: projectId });
      }
      expect((await svc.api('/api/v1/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
      const res = await svc.api('/api/v1/bulk-exports', {
        method: 'POST',
        json: { bulk_export_destination_id: destId, session_id: projectId, start_time: new Date(start).toISOString(), interval_hours: 1, export_fields: ['name'] },
      });
      expect(res.status).toBe(200);
      const scheduled = await json(res);
      expect(scheduled).toMatchObject({ interval_hours: 1, end_time: null });
      const spawned = await until('two spawned exports to complete', async () => {
        const runs = (await (await svc.api(`/api/v1/bulk-exports/${scheduled.id as string}/runs`)).json()) as Json[];
        return runs.length === 2 && runs.every((r) => r.status === 'COMPLETED') ? runs : null;
      }, 60_000, async () => [await getExport(scheduled.id as string), await (await svc.api(`/api/v1/bulk-exports/${scheduled.id as string}/runs`)).json()]);
      const windows = spawned.map((r) => [r.start_time, r.end_time, r.source_bulk_export_id, r.rows_written]).sort();
      const iso = (ms: number) => new Date(ms).toISOString().replace('Z', '000Z');
      expect(windows).toEqual([
        [iso(start), iso(start + hour), scheduled.id, 1],
        [iso(start + hour), iso(start + 2 * hour), scheduled.id, 1],
      ]);
      for (const [i, r] of spawned.sort((a, b) => String(a.start_time).localeCompare(String(b.start_time))).entries()) {
        expect((await readParquet(parquetKeys(r.id as string), 'id')).map((x) => x.id)).toEqual([runIds[i]]);
      }
      expect((await getExport(scheduled.id as string)).status).toBe('RUNNING');

      const cancel = await svc.api(`/api/v1/bulk-exports/${scheduled.id as string}`, { method: 'PATCH', json: { status: 'Cancelled' } });
      expect(cancel.status).toBe(200);
      expect((await json(cancel)).status).toBe('CANCELLED');
      const after = (await (await svc.api(`/api/v1/bulk-exports/${scheduled.id as string}/runs`)).json()) as Json[];
      expect(after.map((r) => r.status)).toEqual(['COMPLETED', 'COMPLETED']);
      const again = await svc.api(`/api/v1/bulk-exports/${scheduled.id as string}/cancel`, { method: 'POST' });
      expect(again.status).toBe(409);
      expect((await svc.api(`/api/v1/bulk-exports/${scheduled.id as string}`, { method: 'PATCH', json: { status: 'RUNNING' } })).status).toBe(422);
      expect(audit.some((a) => a.operation === 'cancel_bulk_export' && a.status === 'Success' && a.resources.some((r) => r.id === scheduled.id))).toBe(true);
      const list = (await (await svc.api('/api/v1/bulk-exports?limit=1000')).json()) as Json[];
      expect(list.map((e) => e.id)).toEqual(expect.arrayContaining([scheduled.id, ...spawned.map((s) => s.id)]));
    });

    it('still decrypts stored credentials after a restart (the generated key is kept in DATA_DIR)', async () => {
      const key = readFileSync(join(tmpdir(), `th-standalone-${process.pid}`, 'export-encryption-key'), 'utf8').trim();
      expect(key.length).toBeGreaterThanOrEqual(32);
      await svc.close();
      svc = await startTestStandalone({ DATABASE_URL: db.url, EXPORT_POLL_MS: '200', BOOTSTRAP_API_KEY: svc.apiKey, OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
      const res = await svc.api('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ export_fields: ['name'] }) });
      expect(res.status).toBe(200);
      expect(await finished((await json(res)).id as string)).toMatchObject({ status: 'COMPLETED', rows_written: 8 });
      expect(readFileSync(join(tmpdir(), `th-standalone-${process.pid}`, 'export-encryption-key'), 'utf8').trim()).toBe(key);
    });
  });
});
