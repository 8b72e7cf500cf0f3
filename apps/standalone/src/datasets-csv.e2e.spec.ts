import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import { multipartBody } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
type Part = Parameters<typeof multipartBody>[0][number];
const json = async <T = Json>(res: Response): Promise<T> => (await res.json()) as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('create_csv_dataset (POST /datasets/upload) through the standalone service', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `csv-e2e-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value as AuditRecord);
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const upload = (parts: Part[]) => {
    const { body, contentType } = multipartBody(parts);
    return svc.api('/api/v1/datasets/upload', { method: 'POST', body, headers: { 'content-type': contentType } });
  };
  const file = (csv: string | Buffer, filename = 'data.csv'): Part => ({ name: 'file', data: Buffer.isBuffer(csv) ? csv : Buffer.from(csv), filename, contentType: 'text/csv' });
  const text = (name: string, value: string): Part => ({ name, data: Buffer.from(value), contentType: 'text/plain' });
  const datasetsNamed = async (name: string): Promise<Json[]> => json<Json[]>(await svc.api(`/api/v1/datasets?name=${encodeURIComponent(name)}`));
  const auditCount = (status: 'Success' | 'Failure') => audit.filter((e) => e.operation === 'create_csv_dataset' && e.status === status).length;
  const waitForAudit = async (status: 'Success' | 'Failure', atLeast: number) => {
    for (let i = 0; i < 100 && auditCount(status) < atLeast; i++) await sleep(50);
    expect(auditCount(status)).toBeGreaterThanOrEqual(atLeast);
  };

  it('creates a dataset with examples from a CSV uploaded with the langsmith SDK', async () => {
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, timeout_ms: 20_000 });
    const name = `csv-${randomUUID()}`;
    const csv = 'question,context,answer,ignored\r\nWhat is 2+2?,math,4,x\r\n"Say ""hi"", please",,"hi,\nthere",y\r\n';
    const ds = await client.uploadCsv({ csvFile: new Blob([csv]), fileName: 'qa.csv', inputKeys: ['question', 'context'], outputKeys: ['answer'], name, description: 'from csv', dataType: 'kv' });
    expect(ds.name).toBe(name);
    expect(ds.description).toBe('from csv');
    expect(ds.data_type).toBe('kv');
    expect((ds as unknown as Json).example_count).toBe(2);
    const examples = [];
    for await (const e of client.listExamples({ datasetId: ds.id })) examples.push(e);
    expect(examples.map((e) => [e.inputs, e.outputs]).sort((a, b) => String((a[0] as Json).question).localeCompare(String((b[0] as Json).question)))).toEqual([
      [{ question: 'Say "hi", please', context: '' }, { answer: 'hi,\nthere' }],
      [{ question: 'What is 2+2?', context: 'math' }, { answer: '4' }],
    ]);
    await waitForAudit('Success', 1);
    expect(audit.find((e) => e.operation === 'create_csv_dataset' && e.status === 'Success')!.resources).toEqual([{ type: 'dataset', id: ds.id }]);
  });

  it('names the dataset after the file when no name is given, and allows no output keys', async () => {
    const fname = `named-${randomUUID()}`;
    const res = await upload([file('q\nx\n', `${fname}.csv`), text('input_keys', 'q')]);
    expect(res.status).toBe(200);
    const ds = await json(res);
    expect(ds.name).toBe(fname);
    const ex = await json<Json[]>(await svc.api(`/api/v1/examples?dataset=${ds.id as string}`));
    expect(ex.map((e) => [e.inputs, e.outputs])).toEqual([[{ q: 'x' }, null]]);
  });

  it('refuses bad uploads with 4xx, creates nothing and audits the failure', async () => {
    const name = `bad-csv-${randomUUID()}`;
    const failuresBefore = auditCount('Failure');
    const bad = async (parts: Part[], loc: unknown[], msg: RegExp) => {
      const res = await upload([text('name', name), ...parts]);
      expect(res.status).toBe(422);
      const detail = (await json(res)).detail as { loc: unknown[]; msg: string }[];
      expect(detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(loc) && msg.test(d.msg))).toBe(true);
    };
    await bad([text('input_keys', 'a')], ['body', 'file'], /CSV file/);
    await bad([file('a,b\n1,2\n')], ['body', 'input_keys'], /./);
    await bad([file('a,b\n1,2\n'), text('input_keys', 'a'), text('output_keys', 'zzz')], ['body', 'output_keys', 0], /"zzz" is not in the CSV header/);
    await bad([file('a,b\n1,2\n'), text('input_keys', 'nope')], ['body', 'input_keys', 0], /not in the CSV header/);
    await bad([file('a,b\n1,2\n3\n'), text('input_keys', 'a')], ['body', 'file', 'line 3'], /1 fields; the header has 2/);
    await bad([file('a,b\n"1,2\n'), text('input_keys', 'a')], ['body', 'file', 'line 2'], /not closed/);
    await bad([file('a,a\n1,2\n'), text('input_keys', 'a')], ['body', 'file', 'line 1'], /appears twice/);
    await bad([file(''), text('input_keys', 'a')], ['body', 'file'], /empty/);
    await bad([file(Buffer.from([0x61, 0x0a, 0xff, 0xfe, 0x0a])), text('input_keys', 'a')], ['body', 'file'], /UTF-8/);
    await bad([file('a\n1\n'), text('input_keys', 'a'), text('data_type', 'weird')], ['body', 'data_type'], /./);
    const notMultipart = await svc.api('/api/v1/datasets/upload', { method: 'POST', json: { name, input_keys: ['a'] } });
    expect(notMultipart.status).toBe(422);
    expect(await datasetsNamed(name)).toEqual([]);

    // a name already taken: 409, and the existing dataset keeps its examples
    const first = await upload([text('name', name), file('a\n1\n'), text('input_keys', 'a')]);
    expect(first.status).toBe(200);
    const again = await upload([text('name', name), file('a\n1\n2\n'), text('input_keys', 'a')]);
    expect(again.status).toBe(409);
    const [only] = await datasetsNamed(name);
    expect(only.example_count).toBe(1);
    await waitForAudit('Failure', failuresBefore + 12);
  });
});
