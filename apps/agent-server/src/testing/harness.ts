import { Client } from '@langchain/langgraph-sdk';
import { Client as Pg } from 'pg';
import { Module } from '@nestjs/common';
import { join } from 'node:path';
import { AgentServerModule, installFastPath, loadAgentServerConfig } from '@th/agent-server';
import { HealthModule, createHttpApp, listen } from '@th/platform';
import { createTestDatabase } from '@th/testing';

export const TEST_GRAPHS_CONFIG = join(__dirname, 'graphs', 'langgraph.json');

export interface TestAgentServer {
  url: string;
  databaseUrl: string;
  stop(): Promise<void>;
}

/** Starts an agent server in this process on 127.0.0.1, on `databaseUrl` or a fresh database. */
export async function startTestAgentServer(env: Record<string, string> = {}, databaseUrl?: string): Promise<TestAgentServer & { dropDatabase(): Promise<void> }> {
  const db = databaseUrl ? null : await createTestDatabase('th_agent');
  const url = databaseUrl ?? db!.url;
  const config = loadAgentServerConfig({ LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: '0', DATABASE_URL: url, GRAPHS_CONFIG: TEST_GRAPHS_CONFIG, ...env });
  @Module({ imports: [HealthModule, AgentServerModule.forRoot(config)] })
  class TestAgentServerModule {}
  const app = await createHttpApp(TestAgentServerModule, { service: 'agent-server', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES });
  installFastPath(app, config.MAX_BODY_BYTES); // as main.ts
  const running = await listen(app, config.HOST, config.PORT);
  return {
    url: running.url,
    databaseUrl: url,
    stop: () => running.close(),
    dropDatabase: async () => {
      if (db) await db.drop();
    },
  };
}

export interface AgentServerFixture {
  server: TestAgentServer & { dropDatabase(): Promise<void> };
  /** The published client, pointed at the server. */
  client: Client;
  /** A direct connection to the server's database, for checking what was (not) written. */
  pg: Pg;
}

/**
 * Starts a test agent server on a fresh database for the enclosing file, and removes both afterwards;
 * `env` overrides its configuration (e.g. a short CRON_TICK_MS).
 */
export function useAgentServer(ready: (fixture: AgentServerFixture) => void, env: Record<string, string> = {}): void {
  let fixture: AgentServerFixture | undefined;
  beforeAll(async () => {
    const server = await startTestAgentServer(env);
    const pg = new Pg({ connectionString: server.databaseUrl });
    await pg.connect();
    fixture = { server, client: new Client({ apiUrl: server.url, apiKey: null, defaultHeaders: {} }), pg };
    ready(fixture);
  });
  afterAll(async () => {
    await fixture?.pg.end();
    await fixture?.server.stop();
    await fixture?.server.dropDatabase();
  });
}
