import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@th/config';
import { createTestDatabase, removeWhenProcessExits, repoRoot, type DatabaseTemplate } from '@th/testing';
import { standaloneConfigSchema } from '../config';
import { openStandaloneDatabases, startStandalone, type RunningStandalone } from '../standalone';

/** Every service's schema, migrated once per version of the migrations; each test database is a copy of it. */
export const STANDALONE_DATABASE_TEMPLATE: DatabaseTemplate = {
  name: 'th_tpl_standalone',
  sources: ['apps/standalone/src/standalone.ts', 'libs/database/src', ...['gateway', 'query', 'datasets', 'prompt-hub', 'audit', 'control-plane', 'export-worker'].map((lib) => `libs/${lib}/src/migrations`)].map((p) =>
    join(repoRoot(), p),
  ),
  async migrate(url) {
    for (const db of Object.values(await openStandaloneDatabases(url))) await db.destroy();
  },
};

export interface TestStandalone extends RunningStandalone {
  /** The test's own PostgreSQL database (dropped on close). */
  databaseUrl: string;
  /** fetch against the service with the bootstrap key. */
  api(path: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
}

/**
 * The whole service in this test process, on the machine's PostgreSQL (a fresh database) and chDB.
 * chDB binds one data directory per process, so every test file of a jest worker shares one
 * directory and stays apart by workspace (a fresh organization per start).
 */
export async function startTestStandalone(env: Record<string, string> = {}): Promise<TestStandalone> {
  const db = await createTestDatabase('th_test', STANDALONE_DATABASE_TEMPLATE);
  const dataDir = join(tmpdir(), `th-standalone-${process.pid}`);
  removeWhenProcessExits(dataDir);
  const config = loadConfig(standaloneConfigSchema, {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: db.url,
    BOOTSTRAP_API_KEY: `th_test_${randomBytes(12).toString('hex')}`,
    LOG_LEVEL: 'warn',
    PRINT_BANNER: 'false',
    // The spec's production limits (1 stats call per 10 s per key...) would throttle functional tests; rate-limit tests turn them on.
    RATE_LIMIT_ENABLED: 'false',
    // Parallel test services must not compete for the SDK's link port; web.e2e.spec.ts sets a free one.
    WEB_LINK_PORT: '0',
    ...env,
  });
  const running = await startStandalone(config);
  return {
    ...running,
    databaseUrl: db.url,
    api(path, init = {}) {
      const headers = new Headers(init.headers);
      if (!headers.has('x-api-key')) headers.set('x-api-key', running.apiKey);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return fetch(`${running.url}${path}`, { ...init, headers, body });
    },
    async close() {
      await running.close();
      await db.drop();
    },
  };
}
