export * from './agent-server.module';
