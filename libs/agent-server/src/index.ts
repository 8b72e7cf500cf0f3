export * from './agent-server.module';
export * from './agent-server.config';
export * from './graph-registry';
export { AgentRuntime } from './agent-runtime';
export { installFastPath } from './fast-path';
