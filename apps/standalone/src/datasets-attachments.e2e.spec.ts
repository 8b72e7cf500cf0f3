import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import { multipartBody } from '@th/testing';
import { DATASETS_DATA_SOURCE } from '@th/datasets';
import { isPublicRoute, routeFor } from '@th/gateway';
import type { DataSource } from 'typeorm';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
type Urls = Record<string, { presigned_url: string; mime_type: string }>;
const json = async <T = Json>(res: Response): Promise<T> => (await res.json()) as T;

describe('example attachments through the standalone service', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `attachments-e2e-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value as AuditRecord);
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const createDataset = async (): Promise<string> => {
    const res = await svc.api('/api/v1/datasets', { method: 'POST', json: { name: `att-${randomUUID()}` } });
    expect(res.status).toBe(200);
    return (await json(res)).id as string;
  };
  /** Fetches a download URL the way the SDK does: no API key. */
  const download = async (url: string): Promise<{ status: number; type: string | null; bytes: Buffer }> => {
    const res = await fetch(new URL(url, svc.url));
    return { status: res.status, type: res.headers.get('content-type'), bytes: Buffer.from(await res.arrayBuffer()) };
  };
  const examplesOf = async (datasetId: string, asOf?: string): Promise<Json[]> => {
    const res = await svc.api(`/api/v1/examples?dataset=${datasetId}${asOf ? `&as_of=${encodeURIComponent(asOf)}` : ''}`);
    expect(res.status).toBe(200);
    return json<Json[]>(res);
  };
  const blobCount = async (datasetId: string): Promise<number> => {
    const ds = svc.app.get<DataSource>(DATASETS_DATA_SOURCE, { strict: false });
    const rows = (await ds.query(`SELECT count(*)::int AS n FROM "datasets"."attachment_blobs" WHERE dataset_id = $1`, [datasetId])) as { n: number }[];
    return rows[0].n;
  };
  const post = (datasetId: string, parts: Parameters<typeof multipartBody>[0], method = 'POST') => {
    const { body, contentType } = multipartBody(parts);
    return svc.api(`/api/v1/platform/datasets/${datasetId}/examples`, { method, body, headers: { 'content-type': contentType } });
  };

  it('in the cluster form, the gateway passes attachment downloads to the query service without an API key', () => {
    const up = { ingest: 'http://i', query: 'http://q' };
    const path = `/public/example-attachments/${randomUUID()}`;
    expect(routeFor('GET', path, up)).toBe('http://q');
    expect(isPublicRoute('GET', path)).toBe(true);
    expect(isPublicRoute('POST', path)).toBe(false);
  });

  it('stores attachments uploaded with the SDK, versions them, and serves them by signed URL without an API key', async () => {
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, timeout_ms: 20_000 });
    const datasetId = await createDataset();
    const png = randomBytes(3000);
    const created = await client.createExamples([
      {
        dataset_id: datasetId,
        inputs: { q: 'picture?' },
        outputs: { a: 'yes' },
        attachments: { img: ['image/png', png], notes: { mimeType: 'text/plain', data: new TextEncoder().encode('hello notes') } },
      },
      { dataset_id: datasetId, inputs: { q: 'plain' } },
    ]);
    expect(created).toHaveLength(2);

    const listed = [];
    for await (const e of client.listExamples({ datasetId, includeAttachments: true })) listed.push(e);
    const withFiles = listed.find((e) => e.inputs.q === 'picture?')!;
    expect(listed.find((e) => e.inputs.q === 'plain')!.attachments).toBeUndefined();
    expect(Object.keys(withFiles.attachments ?? {}).sort()).toEqual(['img', 'notes']);
    const img = await download(withFiles.attachments!.img.presigned_url);
    expect(img.status).toBe(200);
    expect(img.type).toBe('image/png');
    expect(img.bytes.equals(png)).toBe(true);
    expect(withFiles.attachments!.notes.mime_type).toBe('text/plain');
    expect((await download(withFiles.attachments!.notes.presigned_url)).bytes.toString()).toBe('hello notes');
    const read = await client.readExample(withFiles.id);
    expect(read.attachments?.img.mime_type).toBe('image/png');
    const versionBefore = read.modified_at as string;

    // update: rename img → picture, drop notes (not retained), add a new file
    await client.updateExamples([
      {
        id: withFiles.id,
        dataset_id: datasetId,
        outputs: { a: 'still yes' },
        attachments_operations: { rename: { img: 'picture' }, retain: [] },
        attachments: { extra: ['application/json', new TextEncoder().encode('{"x":1}')] },
      },
    ]);
    const after = await client.readExample(withFiles.id);
    expect(after.outputs).toEqual({ a: 'still yes' });
    expect(Object.keys(after.attachments ?? {}).sort()).toEqual(['extra', 'picture']);
    expect((await download(after.attachments!.picture.presigned_url)).bytes.equals(png)).toBe(true);
    expect((await download(after.attachments!.extra.presigned_url)).bytes.toString()).toBe('{"x":1}');
    // an update without attachments_operations keeps every attachment
    await client.updateExamples([{ id: withFiles.id, dataset_id: datasetId, metadata: { m: 1 } }]);
    expect(Object.keys((await client.readExample(withFiles.id)).attachments ?? {}).sort()).toEqual(['extra', 'picture']);
    // new files without attachments_operations replace them (the Python SDK's update_example(attachments=...))
    await client.updateExamples([{ id: withFiles.id, dataset_id: datasetId, attachments: { fresh: ['text/plain', new TextEncoder().encode('new')] } }]);
    const replaced = await client.readExample(withFiles.id);
    expect(Object.keys(replaced.attachments ?? {})).toEqual(['fresh']);
    expect((await download(replaced.attachments!.fresh.presigned_url)).bytes.toString()).toBe('new');

    // the older version still has the old names and bytes
    const old = (await examplesOf(datasetId, versionBefore)).find((e) => e.id === withFiles.id)!;
    const oldUrls = old.attachment_urls as Urls;
    expect(Object.keys(oldUrls).sort()).toEqual(['attachment.img', 'attachment.notes']);
    expect((await download(oldUrls['attachment.notes'].presigned_url)).bytes.toString()).toBe('hello notes');
    expect(audit.some((e) => e.operation === 'update_examples' && e.status === 'Success')).toBe(true);
  });

  it('refuses tampered, expired and malformed download URLs', async () => {
    const datasetId = await createDataset();
    const id = randomUUID();
    const res = await post(datasetId, [
      { name: id, data: {} },
      { name: `${id}.inputs`, data: { q: 1 } },
      { name: `${id}.attachment.f`, data: Buffer.from('secret'), contentType: 'text/plain; length=6' },
    ]);
    expect(res.status).toBe(201);
    const ex = await json(await svc.api(`/api/v1/examples/${id}`));
    const url = new URL((ex.attachment_urls as Urls)['attachment.f'].presigned_url, svc.url);
    expect((await download(url.href)).bytes.toString()).toBe('secret');

    const tampered = new URL(url.href);
    tampered.searchParams.set('signature', `${url.searchParams.get('signature')!.slice(0, -2)}AA`);
    expect((await download(tampered.href)).status).toBe(403);
    const extended = new URL(url.href);
    extended.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 10));
    expect((await download(extended.href)).status).toBe(403);
    const expired = new URL(url.href);
    expired.searchParams.set('expires', '1000');
    expect((await download(expired.href)).status).toBe(403);
    const otherBlob = new URL(url.href);
    otherBlob.pathname = otherBlob.pathname.replace(/[^/]+$/, randomUUID());
    expect((await download(otherBlob.href)).status).toBe(403);
    const noSig = new URL(url.href);
    noSig.searchParams.delete('signature');
    const missing = await fetch(noSig);
    expect(missing.status).toBe(422);
    expect(((await json(missing)).detail as Json[])[0].loc).toEqual(['query', 'signature']);
    expect((await fetch(new URL('/public/example-attachments/not-a-uuid?expires=1&signature=x', svc.url))).status).toBe(422);
  });

  it('refuses bad attachment parts and operations with 422 and writes nothing', async () => {
    const datasetId = await createDataset();
    const id = randomUUID();
    const bad = async (parts: Parameters<typeof multipartBody>[0], method = 'POST', locPart?: string) => {
      const res = await post(datasetId, parts, method);
      expect(res.status).toBe(422);
      const detail = (await json(res)).detail as { loc: unknown[] }[];
      if (locPart) expect(detail.some((d) => d.loc.includes(locPart))).toBe(true);
    };
    await bad([{ name: `${id}.inputs`, data: { q: 1 } }, { name: `${id}.attachment.f`, data: Buffer.from('abc'), contentType: 'text/plain; length=99' }], 'POST', `${id}.attachment.f`);
    await bad([{ name: `${id}.inputs`, data: { q: 1 } }, { name: `${id}.attachment.f`, data: Buffer.from('abc'), contentType: 'not a type' }], 'POST', `${id}.attachment.f`);
    await bad([{ name: `${id}.inputs`, data: { q: 1 } }, { name: `${id}.attachment.`, data: Buffer.from('abc'), contentType: 'text/plain' }]);
    await bad([
      { name: `${id}.inputs`, data: { q: 1 } },
      { name: `${id}.attachment.f`, data: Buffer.from('a'), contentType: 'text/plain' },
      { name: `${id}.attachment.f`, data: Buffer.from('b'), contentType: 'text/plain' },
    ]);
    await bad([{ name: `${id}.inputs`, data: { q: 1 } }, { name: `${id}.whatever`, data: { x: 1 } }]);
    expect(await examplesOf(datasetId)).toEqual([]);
    expect(await blobCount(datasetId)).toBe(0);

    // a real example, then updates naming attachments it does not have
    expect((await post(datasetId, [{ name: `${id}.inputs`, data: { q: 1 } }, { name: `${id}.attachment.f`, data: Buffer.from('abc'), contentType: 'text/plain' }])).status).toBe(201);
    const before = await json(await svc.api(`/api/v1/examples/${id}`));
    await bad([{ name: id, data: {} }, { name: `${id}.attachments_operations`, data: { retain: ['nope'] } }, { name: `${id}.attachment.g`, data: Buffer.from('g'), contentType: 'text/plain' }], 'PATCH', 'retain');
    await bad([{ name: id, data: {} }, { name: `${id}.attachments_operations`, data: { rename: { nope: 'x' } } }], 'PATCH', 'rename');
    await bad([{ name: id, data: {} }, { name: `${id}.attachments_operations`, data: { retain: 'f' } }], 'PATCH');
    await bad([{ name: id, data: {} }, { name: `${id}.attachments_operations`, data: { retain: ['f'], rename: { f: 'f' } } }], 'PATCH', 'rename');
    const unchanged = await json(await svc.api(`/api/v1/examples/${id}`));
    expect(unchanged.modified_at).toBe(before.modified_at);
    expect(Object.keys(unchanged.attachment_urls as Urls)).toEqual(['attachment.f']);
    expect(await blobCount(datasetId)).toBe(1);
    expect(audit.some((e) => e.operation === 'update_examples' && e.status === 'Failure' && e.resources.some((r) => r.id === id))).toBe(true);

    // An update through another dataset's route is a 409 (the SDKs expect a conflict), an unknown example a 404; nothing changes.
    const other = await createDataset();
    const through = await post(other, [{ name: id, data: {} }, { name: `${id}.inputs`, data: { q: 2 } }], 'PATCH');
    expect(through.status).toBe(409);
    expect(await json(await svc.api(`/api/v1/examples/${id}`))).toMatchObject({ inputs: { q: 1 }, modified_at: before.modified_at });
    const unknown = randomUUID();
    expect((await post(datasetId, [{ name: unknown, data: {} }, { name: `${unknown}.inputs`, data: { q: 2 } }], 'PATCH')).status).toBe(404);
  });

  it('copies attachments on clone and removes the files of hard-deleted examples', async () => {
    const source = await createDataset();
    const target = await createDataset();
    const id = randomUUID();
    expect((await post(source, [{ name: `${id}.inputs`, data: { q: 1 } }, { name: `${id}.attachment.f`, data: Buffer.from('cloned bytes'), contentType: 'application/octet-stream' }])).status).toBe(201);
    const clone = await svc.api('/api/v1/datasets/clone', { method: 'POST', json: { source_dataset_id: source, target_dataset_id: target } });
    expect(clone.status).toBe(200);
    const [copy] = await examplesOf(target);
    const copyUrl = (copy.attachment_urls as Urls)['attachment.f'].presigned_url;
    const original = (await examplesOf(source))[0];
    const originalUrl = (original.attachment_urls as Urls)['attachment.f'].presigned_url;
    expect(copyUrl).not.toBe(originalUrl);

    const del = await svc.api('/api/v1/platform/datasets/examples/delete', { method: 'POST', json: { example_ids: [id], hard_delete: true } });
    expect(del.ok).toBe(true);
    expect((await download(originalUrl)).status).toBe(404);
    const kept = await download(copyUrl);
    expect(kept.status).toBe(200);
    expect(kept.bytes.toString()).toBe('cloned bytes');
  });
});
