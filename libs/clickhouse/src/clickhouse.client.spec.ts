import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createWriteStream } from 'node:fs';
import { ClickHouse } from './clickhouse.client';

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

  it('streams the Parquet output of a query through a file beside the engine, removed when the stream closes (and stale ones at connect)', async () => {
    expect(outputs()).toEqual([]);
    const stream = await ch.queryStream('SELECT number AS n, toString(number) AS s FROM numbers({count:UInt32})', { count: 100_000 }, 'Parquet', { output_format_parquet_row_group_size: 10_000 });
    expect(outputs()).toHaveLength(1);
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
