import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { ClickHouseClient, ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import { ClickHouseHttpServer, startClickHouseHttpServer } from './clickhouse-http-server';

jest.setTimeout(120_000);

interface Row {
  id: number;
  name: string;
  tags: string[];
}

function rawPost(
  url: string,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function expectClickHouseError(promise: Promise<unknown>): Promise<ClickHouseError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ClickHouseError);
    return err as ClickHouseError;
  }
  throw new Error('expected a ClickHouseError');
}

describe('startClickHouseHttpServer (chDB behind the ClickHouse HTTP interface)', () => {
  let dataDir: string;
  let server: ClickHouseHttpServer;
  let client: ClickHouseClient;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ch-http-spec-'));
    server = await startClickHouseHttpServer({ dataDir });
    client = createClient({ url: server.url, log: { level: ClickHouseLogLevel.OFF } });
  });

  afterAll(async () => {
    await client?.close();
    await server?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('binds 127.0.0.1 and answers ping', async () => {
    expect(server.url).toBe(`http://127.0.0.1:${server.port}`);
    expect(await client.ping()).toEqual({ success: true });
  });

  it('creates a MergeTree table, inserts via insert() and exec() with a byte stream, and queries with params', async () => {
    await client.command({
      query: 'CREATE TABLE t (id UInt64, name String, tags Array(String)) ENGINE = MergeTree ORDER BY id',
    });

    const inserted = await client.insert({
      table: 't',
      format: 'JSONEachRow',
      values: [
        { id: 1, name: "it's", tags: ['a', 'b'] },
        { id: 2, name: 'tab\there\\slash', tags: [] },
      ],
    });
    expect(inserted.summary?.written_rows).toBe('2');

    const ndjson = [
      { id: 3, name: 'streamed-1', tags: ['x'] },
      { id: 4, name: 'streamed-2', tags: ["q'uote"] },
    ]
      .map((r) => JSON.stringify(r) + '\n')
      .map((line) => Buffer.from(line));
    const exec = await client.exec({
      query: 'INSERT INTO t FORMAT JSONEachRow',
      values: Readable.from(ndjson, { objectMode: false }),
    });
    for await (const _chunk of exec.stream) {
      // an insert answers with an empty body; drain it to free the socket
    }
    expect(exec.summary?.written_rows).toBe('2');

    const rs = await client.query({
      query:
        'SELECT id, name, tags FROM t WHERE name = {name:String} OR has({names:Array(String)}, name) OR id IN {ids:Array(UInt64)} ORDER BY id',
      query_params: { name: "it's", names: ['tab\there\\slash'], ids: [4] },
      format: 'JSONEachRow',
    });
    expect(rs.response_headers['x-clickhouse-format']).toBe('JSONEachRow');
    expect(await rs.json<Row>()).toEqual([
      { id: 1, name: "it's", tags: ['a', 'b'] },
      { id: 2, name: 'tab\there\\slash', tags: [] },
      { id: 4, name: 'streamed-2', tags: ["q'uote"] },
    ]);

    const count = await client.query({ query: 'SELECT count() AS c FROM t', format: 'JSON' });
    const json = await count.json<{ c: number }>();
    expect(json.data).toEqual([{ c: 4 }]);
  });

  it('gives a table created through it the part placement hint of the in-process engine (chattr +T, where the file system has it)', async () => {
    await client.command({ query: 'CREATE TABLE placed (id UInt64) ENGINE = MergeTree ORDER BY id' });
    const rs = await client.query({ query: "SELECT data_paths[1] AS path FROM system.tables WHERE name = 'placed'", format: 'JSONEachRow' });
    const [{ path }] = await rs.json<{ path: string }>();
    const probe = mkdtempSync(join(dataDir, 'probe-'));
    let supported = true;
    try {
      execFileSync('chattr', ['+T', probe], { stdio: 'ignore' });
    } catch {
      supported = false;
    }
    const flags = execFileSync('lsattr', ['-d', path]).toString().split(' ')[0];
    expect(flags.includes('T')).toBe(supported);
    await client.insert({ table: 'placed', format: 'JSONEachRow', values: [{ id: 1 }, { id: 2 }] });
    const count = await client.query({ query: 'SELECT count() AS c FROM placed', format: 'JSONEachRow' });
    expect(await count.json<{ c: number }>()).toEqual([{ c: 2 }]);
  });

  it('inserts RowBinary bodies whole, an empty line ("\\n\\n") in the bytes included', async () => {
    await client.command({ query: 'CREATE TABLE rb (id UInt64, name String, n Nullable(Int32)) ENGINE = MergeTree ORDER BY id' });
    // id 10 as a UInt64 starts with 0x0a; the name holds "\n\n": chDB's inline insert data would end there.
    const row = (id: number, name: string, n: number | null): Buffer => {
      const text = Buffer.from(name);
      const num = Buffer.alloc(8);
      num.writeUInt32LE(id, 0);
      const nullable = n === null ? Buffer.from([1]) : Buffer.concat([Buffer.from([0]), Buffer.from(new Int32Array([n]).buffer)]);
      return Buffer.concat([num, Buffer.from([text.length]), text, nullable]);
    };
    const body = Buffer.concat([row(10, 'a\n\nb', 7), row(2570, '\n\n', null), row(3, 'tail', -1)]);
    expect(body.includes('\n\n')).toBe(true);
    const exec = await client.exec({ query: 'INSERT INTO rb (id, name, n) FORMAT RowBinary', values: Readable.from([body], { objectMode: false }) });
    for await (const _chunk of exec.stream) {
      // drain
    }
    const rs = await client.query({ query: 'SELECT id, name, n FROM rb ORDER BY id', format: 'JSONEachRow' });
    expect(await rs.json()).toEqual([
      { id: 3, name: 'tail', n: -1 },
      { id: 10, name: 'a\n\nb', n: 7 },
      { id: 2570, name: '\n\n', n: null },
    ]);
    // A truncated body is refused whole.
    await expectClickHouseError(client.exec({ query: 'INSERT INTO rb (id, name, n) FORMAT RowBinary', values: Readable.from([body.subarray(0, body.length - 3)], { objectMode: false }) }));
    const count = await client.query({ query: 'SELECT count() AS c FROM rb', format: 'JSONEachRow' });
    expect(await count.json()).toEqual([{ c: 3 }]);
  });

  it('raises ClickHouseError with the code and type of the server error', async () => {
    // Lower-case on purpose: the client's error regex takes the first `(UPPERCASE)`
    // group, and a real server echoes the failing token in parentheses too.
    const syntax = await expectClickHouseError(client.query({ query: 'selec 1' }));
    expect(syntax.code).toBe('62');
    expect(syntax.type).toBe('SYNTAX_ERROR');

    const missing = await expectClickHouseError(client.query({ query: 'SELECT * FROM no_such_table' }));
    expect(missing.code).toBe('60');
    expect(missing.type).toBe('UNKNOWN_TABLE');

    const raw = await rawPost(server.url, '/?query_id=q-1', Buffer.from('SELEC 1'));
    expect(raw.status).toBe(400);
    expect(raw.headers['x-clickhouse-exception-code']).toBe('62');
    expect(raw.headers['x-clickhouse-query-id']).toBe('q-1');
    expect(raw.body).toMatch(/^Code: 62\. DB::Exception: .*\(SYNTAX_ERROR\) \(version \d+\.\d+[^)]*\)\n$/s);
  });

  it('applies URL settings to one request only and reports a summary', async () => {
    const withSetting = await client.query({
      query: "SELECT getSetting('max_threads') AS m",
      format: 'JSONEachRow',
      clickhouse_settings: { max_threads: 1 },
    });
    expect(await withSetting.json()).toEqual([{ m: 1 }]);
    const summary = JSON.parse(String(withSetting.response_headers['x-clickhouse-summary'])) as Record<string, string>;
    expect(Object.keys(summary)).toEqual(
      expect.arrayContaining(['read_rows', 'read_bytes', 'written_rows', 'written_bytes', 'result_rows', 'elapsed_ns']),
    );

    const unknown = await expectClickHouseError(
      client.query({ query: 'SELECT 1', clickhouse_settings: { no_such_setting_xyz: 1 } as Record<string, number> }),
    );
    expect(unknown.type).toBe('UNKNOWN_SETTING');
  });

  it('accepts gzip request bodies and compresses responses when asked', async () => {
    const gz = createClient({
      url: server.url,
      compression: { request: true, response: true },
      log: { level: ClickHouseLogLevel.OFF },
    });
    try {
      await gz.insert({ table: 't', format: 'JSONEachRow', values: [{ id: 5, name: 'gzip', tags: [] }] });
      const rs = await gz.query({ query: 'SELECT name FROM t WHERE id = {id:UInt64}', query_params: { id: 5 }, format: 'JSONEachRow' });
      expect(rs.response_headers['content-encoding']).toBe('gzip');
      expect(await rs.json()).toEqual([{ name: 'gzip' }]);
    } finally {
      await gz.close();
    }

    const raw = await rawPost(server.url, '/?query=' + encodeURIComponent('INSERT INTO t FORMAT JSONEachRow'), gzipSync('{"id":6,"name":"raw-gzip","tags":[]}\n'), {
      'Content-Encoding': 'gzip',
    });
    expect(raw.status).toBe(200);
  });

  it('serves concurrent parameterized queries without mixing their bindings', async () => {
    const results = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const rs = await client.query({ query: 'SELECT {v:UInt32} AS v', query_params: { v: i }, format: 'JSONEachRow' });
        return (await rs.json<{ v: number }>())[0]?.v;
      }),
    );
    expect(results).toEqual(Array.from({ length: 24 }, (_, i) => i));
  });
});
