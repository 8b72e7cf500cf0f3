import { LangChainTracer } from '@langchain/core/tracers/tracer_langchain';
import { Client } from 'langsmith';
import type { AgentServerConfig } from './agent-server.config';

export interface Tracing {
  tracer(): LangChainTracer;
  flush(): Promise<void>;
}

/**
 * Every run traced to our tracing service through the published tracing client, in the project named
 * by LANGSMITH_PROJECT (the control plane sets it to the deployment's name). Off without an endpoint and key.
 */
export function createTracing(config: AgentServerConfig): Tracing | null {
  if (!config.LANGSMITH_ENDPOINT || !config.LANGSMITH_API_KEY) return null;
  const client = new Client({ apiUrl: config.LANGSMITH_ENDPOINT, apiKey: config.LANGSMITH_API_KEY, autoBatchTracing: true });
  const projectName = config.LANGSMITH_PROJECT ?? 'default';
  return {
    tracer: () => new LangChainTracer({ client, projectName }),
    flush: () => client.awaitPendingTraceBatches(),
  };
}
