import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse } from './clickhouse.client';

/** The embedded engine (chDB) behind the service's one ClickHouse surface. */
describe('ClickHouse in process', () => {
  const dir = join(tmpdir(), `th-ch-lanes-${process.pid}`);
  let ch: ClickHouse;
  beforeAll(() => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
  });
  afterAll(async () => {
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
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
