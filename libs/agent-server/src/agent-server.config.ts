import { z } from 'zod';
import { commonConfigShape, loadConfig, outboundConfigShape, port, secret } from '@th/config';

/** Everything the agent server reads from its environment; it needs PostgreSQL and a graph file, never Kafka. */
export const agentServerConfigShape = {
  ...commonConfigShape,
  /** Private hosts run webhooks may reach (the control plane passes its own setting to the servers it starts). */
  ...outboundConfigShape,
  /**
   * An HTTP proxy every run webhook goes through instead of connecting itself: the control plane sets its sandbox's,
   * which applies the outbound policy on the host (a sandboxed server has no other route out).
   */
  OUTBOUND_PROXY: z.string().url().optional(),
  PORT: port(8086),
  HOST: z.string().default('0.0.0.0'),
  /**
   * Listen on a unix socket instead of HOST:PORT: a path, or fd:N for a listening socket inherited from the parent
   * (the control plane's sandbox hands one over; the server then has no TCP port).
   */
  LISTEN_SOCKET: z.string().regex(/^(fd:\d+|\/.+)$/, 'an absolute socket path or fd:N').optional(),
  DATABASE_URL: secret(z.string().min(1)),
  /** Absolute path of the graph configuration JSON (the spec's langgraph_config_path format). */
  GRAPHS_CONFIG: z.string().min(1),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(10 * 1024 * 1024),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(200).default(20),
  /** Runs one process executes at once. */
  WORKER_CONCURRENCY: z.coerce.number().int().min(0).max(1000).default(100),
  /** A running run's lease; renewed every third of it. A run whose lease lapsed is retried or failed. */
  RUN_LEASE_SECONDS: z.coerce.number().min(1).max(3600).default(30),
  /** Attempts before a run whose worker died ends as error. */
  RUN_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(2),
  /** Checkpoint durability of a run that does not set its own: async (every step, written in the background; the reference default), sync, or exit (once, when the run ends). */
  RUN_DURABILITY: z.enum(['sync', 'async', 'exit']).default('async'),
  /** How often the cron scheduler looks for due crons (a cron fires at most this late after its minute) and sweeps threads whose ttl ran out. */
  CRON_TICK_MS: z.coerce.number().int().min(50).max(60_000).default(1000),
  LANGSMITH_ENDPOINT: z.string().url().optional(),
  LANGSMITH_API_KEY: secret(z.string().optional()),
  LANGSMITH_PROJECT: z.string().optional(),
};
export const agentServerConfigSchema = z.object(agentServerConfigShape);
export type AgentServerConfig = z.infer<typeof agentServerConfigSchema>;

export function loadAgentServerConfig(env: Record<string, string | undefined>): AgentServerConfig {
  return loadConfig(agentServerConfigSchema, env);
}

export const AGENT_SERVER_CONFIG = Symbol('AGENT_SERVER_CONFIG');
