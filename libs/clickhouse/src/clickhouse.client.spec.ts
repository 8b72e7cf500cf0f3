import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { ClickHouse, wholeParquet } from './clickhouse.client';

/** The embedded engine (chDB) behind the service's one ClickHouse surface. */
describe('ClickHouse in process', () => {
  const parent = join(tmpdir(), `th-ch-lanes-${process.pid}`);
  const dir = join(parent, 'engine');
  let ch: ClickHouse;
  const outputs = () => readdirSync(parent).filter((n) => n.startsWith('engine.out-'));
  beforeAll(() => {
    mkdirSync(parent, { recursive: true });
    writeFileSync(join(parent, 'engine.out-left-by-a-killed-process.parquet'), 'x');
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
  });
  afterAll(async () => {
    await ch?.close();
    rmSync(parent, { recursive: true, force: true });
  });

  it('streams the Parquet output of a query through a file beside the engine, its path gone once the stream has it open (and stale ones at connect)', async () => {
    expect(outputs()).toEqual([]);
    const stream = await ch.queryStream('SELECT number AS n, toString(number) AS s FROM numbers({count:UInt32})', { count: 100_000 }, 'Parquet', { output_format_parquet_row_group_size: 10_000 });
    // A stream that is never read leaves no file behind either.
    const unread = await ch.queryStream('SELECT 1 AS n', {}, 'Parquet');
    expect(outputs()).toEqual([]);
    unread.destroy();
    const copy = join(parent, 'copy.parquet');
    await pipeline(stream, createWriteStream(copy));
    expect(outputs()).toEqual([]);
    const [read] = await ch.query<{ rows: number; sum: number; groups: number }>(
      `SELECT count() AS rows, sum(n) AS sum, (SELECT num_row_groups FROM file({p:String}, ParquetMetadata)) AS groups FROM file({p:String}, Parquet)`,
      { p: copy },
    );
    expect({ ...read, groups: Number(read.groups) > 1 }).toEqual({ rows: 100_000, sum: 4_999_950_000, groups: true });
    await expect(ch.queryStream('SELECT throwIf(number = 5) FROM numbers(10)', {}, 'Parquet')).rejects.toThrow();
    expect(outputs()).toEqual([]);
  });

  it('lets a whole Parquet response through unchanged, and fails one that is cut or ends with an error (a server that fails mid-answer)', async () => {
    const chunks: Buffer[] = [];
    for await (const c of await ch.queryStream('SELECT number AS n, toString(number) AS s FROM numbers(50000)', {}, 'Parquet')) chunks.push(c as Buffer);
    const file = Buffer.concat(chunks);
    const through = async (bytes: Buffer): Promise<Buffer> => {
      const out: Buffer[] = [];
      // Fed in small pieces, so the check sees the magic split across chunks.
      const pieces = Array.from({ length: Math.ceil(bytes.length / 3) }, (_, i) => bytes.subarray(i * 3, i * 3 + 3));
      await pipeline(Readable.from(pieces), wholeParquet(), async function* (src) {
        for await (const c of src) out.push(c as Buffer);
      });
      return Buffer.concat(out);
    };
    expect((await through(file)).equals(file)).toBe(true);
    await expect(through(file.subarray(0, file.length - 100))).rejects.toThrow('not a whole file');
    const errorTailed = Buffer.concat([file.subarray(0, file.length / 2), Buffer.from('Code: 241. DB::Exception: Memory limit exceeded. (MEMORY_LIMIT_EXCEEDED)\n')]);
    await expect(through(errorTailed)).rejects.toThrow('not a whole file');
    await expect(through(Buffer.alloc(0))).rejects.toThrow('not a whole file');
  });

  it('a short statement does not wait behind a long one: statements run side by side on several connections', async () => {
    const finished: string[] = [];
    const long = ch.query('SELECT sum(sipHash64(number)) AS s FROM numbers(200000000)').then(() => finished.push('long'));
    await new Promise((r) => setTimeout(r, 20)); // the long one is under way
    await ch.command('CREATE TABLE IF NOT EXISTS lanes_t (n UInt32) ENGINE = MergeTree ORDER BY n');
    await ch.insertJsonEachRow('lanes_t', Buffer.from('{"n":1}\n{"n":2}'));
    const [{ n }] = await ch.query<{ n: number }>('SELECT count() AS n FROM lanes_t');
    finished.push('short');
    await long;
    expect(Number(n)).toBe(2);
    expect(finished).toEqual(['short', 'long']);
  });
});
