import { Client } from 'pg';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The machine's PostgreSQL (127.0.0.1:5432, trust auth) unless TEST_POSTGRES_URL says otherwise. */
export const TEST_POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A migrated database that test databases are copied from (CREATE DATABASE ... TEMPLATE) instead of migrating each. */
export interface DatabaseTemplate {
  /** Name prefix of the template, e.g. `th_tpl_standalone`; the hash of `sources` is appended. */
  name: string;
  /** Files or folders (recursively, specs excluded) whose content defines the schema: a change makes a new template. */
  sources: string[];
  /** Brings an empty database to the schema; must close its connections before it resolves. */
  migrate(url: string): Promise<void>;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

function databaseUrl(name: string): string {
  const url = new URL(TEST_POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function withAdmin<T>(fn: (admin: Client) => Promise<T>): Promise<T> {
  const admin = new Client({ connectionString: TEST_POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.end();
  }
}

function hashSources(sources: string[]): string {
  const hash = createHash('sha256');
  const visit = (path: string, root: string): void => {
    if (!existsSync(path)) return;
    if (statSync(path).isDirectory()) {
      for (const entry of readdirSync(path).sort()) visit(join(path, entry), root);
    } else if (!path.endsWith('.spec.ts')) {
      hash.update(relative(root, path)).update('\0').update(readFileSync(path)).update('\0');
    }
  };
  for (const source of sources) visit(source, source);
  return hash.digest('hex').slice(0, 12);
}

/**
 * The template's name, built once per schema version under an advisory lock (parallel workers wait for
 * the first). Templates of other versions of the same family are dropped: they are stale migrations.
 */
async function ensureTemplate(template: DatabaseTemplate): Promise<string> {
  const name = `${template.name}_${hashSources(template.sources)}`;
  return withAdmin(async (admin) => {
    const lockKey = Number.parseInt(createHash('sha256').update(template.name).digest('hex').slice(0, 8), 16);
    await admin.query('SELECT pg_advisory_lock($1)', [lockKey]);
    try {
      const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (exists.rowCount === 0) {
        // Built under another name and renamed when complete, so a crash mid-migration leaves no half template.
        const building = `${name}_building`;
        await admin.query(`DROP DATABASE IF EXISTS "${building}" WITH (FORCE)`);
        await admin.query(`CREATE DATABASE "${building}"`);
        await template.migrate(databaseUrl(building));
        await admin.query(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
        await admin.query(`ALTER DATABASE "${name}" WITH IS_TEMPLATE true`);
        const stale = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1 AND datname <> $2', [`${template.name}\\_%`, name]);
        for (const { datname } of stale.rows) {
          await admin.query(`ALTER DATABASE "${datname}" WITH IS_TEMPLATE false`).catch(() => undefined);
          await admin.query(`DROP DATABASE IF EXISTS "${datname}"`).catch(() => undefined);
        }
      }
    } finally {
      await admin.query('SELECT pg_advisory_unlock($1)', [lockKey]);
    }
    return name;
  });
}

/**
 * The databases (each owned by a role of the same name) that a control plane using this test database made for
 * its deployments and did not tear down: they live beside it on the machine's PostgreSQL, so they go with it.
 */
async function leftDeploymentDatabases(url: string): Promise<string[]> {
  const c = new Client({ connectionString: url });
  try {
    await c.connect();
  } catch {
    return [];
  }
  try {
    const table = await c.query<{ t: string | null }>("SELECT to_regclass('control_plane.deployments')::text AS t");
    if (!table.rows[0]?.t) return [];
    const { rows } = await c.query<{ db: string }>(
      "SELECT DISTINCT runtime->>'database_name' AS db FROM control_plane.deployments WHERE runtime->>'database_name' LIKE 'th\\_agent\\_%'",
    );
    return rows.map((r) => r.db);
  } finally {
    await c.end();
  }
}

/**
 * Creates a fresh database for one test process and drops it afterwards: empty, or a copy of `template`
 * (migrated once per schema version instead of once per suite).
 */
export async function createTestDatabase(prefix = 'th_test', template?: DatabaseTemplate): Promise<TestDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  for (let attempt = 1; ; attempt++) {
    const source = template ? await ensureTemplate(template) : undefined;
    try {
      await withAdmin((admin) => admin.query(`CREATE DATABASE "${name}"${source ? ` TEMPLATE "${source}"` : ''}`));
      break;
    } catch (err) {
      // 3D000: another run (with other migrations) dropped the template just now; 55006: it is being built or copied.
      const code = (err as { code?: string }).code;
      if (!source || attempt >= 5 || (code !== '3D000' && code !== '55006')) throw err;
      await new Promise((r) => setTimeout(r, 200 * attempt));
    }
  }
  return {
    url: databaseUrl(name),
    name,
    async drop() {
      const deploymentDatabases = await leftDeploymentDatabases(databaseUrl(name));
      await withAdmin(async (admin) => {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
        for (const db of deploymentDatabases) {
          await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(db)} WITH (FORCE)`);
          await admin.query(`DROP ROLE IF EXISTS ${admin.escapeIdentifier(db)}`);
        }
      });
    },
  };
}
