import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import type { AgentServerConfig } from './agent-server.config';
import { AgentRepository } from './agent.repository';
import { AgentService } from './agent.service';
import { loadGraphs, type LoadedGraph } from './graph-registry';
import { AGENT_SCHEMA, migrateAgentSchema } from './migrations';
import { Notifier } from './notifier';
import { RunWorker } from './run-worker';
import { createTracing, type Tracing } from './tracing';

/**
 * The checkpointer with fork-safe channel versions. The stock saver numbers versions 1, 2, 3…, and blobs
 * are keyed by (thread, namespace, channel, version): two checkpoints forked from one parent (a state
 * update at an earlier checkpoint, then another branch) would both write version n+1 of a channel and the
 * second blob would be dropped (ON CONFLICT DO NOTHING), so the fork would read the other branch's values.
 * Versions stay numbers (comparable with ones already stored) but get a random fraction: still increasing,
 * distinct across forks.
 */
export class ForkSafePostgresSaver extends PostgresSaver {
  override getNextVersion(current: number | undefined): number {
    const base = typeof current === 'number' ? Math.floor(current) : 0;
    return base + 1 + Math.floor(Math.random() * 1e9) / 1e10;
  }
}

/** Everything one agent-server process owns, started in order and closed in reverse. */
export class AgentRuntime {
  private readonly logger = new Logger('agent-server');

  private constructor(
    readonly pool: Pool,
    readonly notifier: Notifier,
    readonly graphs: Map<string, LoadedGraph>,
    readonly worker: RunWorker,
    readonly service: AgentService,
    private readonly tracing: Tracing | null,
  ) {}

  static async start(config: AgentServerConfig): Promise<AgentRuntime> {
    const pool = new Pool({ connectionString: config.DATABASE_URL, max: config.DATABASE_POOL_SIZE });
    pool.on('error', (err) => new Logger('agent-server').warn({ msg: 'idle database connection failed', error: err.message }));
    try {
      const saver = new ForkSafePostgresSaver(pool, undefined, { schema: AGENT_SCHEMA });
      await migrateAgentSchema(pool, () => saver.setup());
      const graphs = await loadGraphs(config.GRAPHS_CONFIG, saver);
      const repo = new AgentRepository(pool);
      await repo.ensureDefaultAssistants([...graphs.values()]);
      const notifier = new Notifier(config.DATABASE_URL);
      await notifier.start();
      const tracing = createTracing(config);
      const worker = new RunWorker(repo, notifier, graphs, {
        concurrency: config.WORKER_CONCURRENCY,
        leaseSeconds: config.RUN_LEASE_SECONDS,
        maxAttempts: config.RUN_MAX_ATTEMPTS,
        durability: config.RUN_DURABILITY,
        callbacks: () => (tracing ? [tracing.tracer()] : []),
      });
      worker.start();
      return new AgentRuntime(pool, notifier, graphs, worker, new AgentService(repo, notifier, graphs), tracing);
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
  }

  async ready(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /** Stop taking runs (finishing the running ones briefly), flush traces, close connections. */
  async close(graceMs = 10_000): Promise<void> {
    await this.worker.stop(graceMs);
    if (this.tracing) await this.tracing.flush().catch((err: Error) => this.logger.warn({ msg: 'trace flush failed', error: err.message }));
    await this.notifier.close();
    await this.pool.end();
  }
}
