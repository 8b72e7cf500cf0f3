import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prepareEmbeddedPostgresDir } from './embedded-postgres';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('embedded PostgreSQL folders', () => {
  let work: string;
  beforeEach(() => {
    work = mkdtempSync(join(tmpdir(), 'th-embedded-pg-'));
    chmodSync(work, 0o700);
  });
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  it('creates the folder private to the server user, and fixes one left world-writable', () => {
    expect(prepareEmbeddedPostgresDir(join(work, 'fresh'))).toBe(0o700);
    const old = join(work, 'old');
    mkdirSync(old);
    chmodSync(old, 0o777);
    expect(prepareEmbeddedPostgresDir(old)).toBe(0o700);
    expect(mode(old)).toBe(0o700);
    // The parent stays closed to others but for traversal when the server runs as another user (root start).
    expect(mode(work) & 0o066).toBe(0);
    // As root the server runs as the postgres user, who must own it.
    if (process.getuid?.() === 0) expect(statSync(old).uid).toBe(Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()));
  });
});
