import { Module } from '@nestjs/common';
import { join } from 'node:path';
import { AgentServerModule, loadAgentServerConfig } from '@th/agent-server';
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
