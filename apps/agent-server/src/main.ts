import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { AgentServerModule, installFastPath, loadAgentServerConfig } from '@th/agent-server';
import { HealthModule, createHttpApp, listen, listenSocket, runUntilSignal } from '@th/platform';

/** The agent server runs on its own per deployment: PostgreSQL and a graph file, no bus. */
runUntilSignal('agent-server', async () => {
  const config = loadAgentServerConfig(process.env);
  @Module({ imports: [HealthModule, AgentServerModule.forRoot(config)] })
  class AgentServerAppModule {}
  const app = await createHttpApp(AgentServerAppModule, { service: 'agent-server', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config });
  installFastPath(app, config.MAX_BODY_BYTES);
  return config.LISTEN_SOCKET ? listenSocket(app, config.LISTEN_SOCKET) : listen(app, config.HOST, config.PORT);
});
