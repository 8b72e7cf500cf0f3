import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse, migrateClickHouse } from '@th/clickhouse';

/**
 * The ClickHouse engine in process (chDB) for one jest suite: opened and migrated in a fresh directory
 * before its tests, closed and removed after them. Call at the top of a describe; the returned function
 * gives the connection inside tests.
 */
export function suiteClickHouse(name: string): () => ClickHouse {
  const dir = join(tmpdir(), `th-${name}-${process.pid}`);
  let ch: ClickHouse | undefined;
  beforeAll(async () => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
    await migrateClickHouse(ch);
  });
  afterAll(async () => {
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    if (!ch) throw new Error('suiteClickHouse: used outside the suite');
    return ch;
  };
}
