import { Logger } from '@nestjs/common';
import { Pool } from 'pg';
import { instrumentPgPool, OutboundPolicy } from '@th/platform';
import type { AgentServerConfig } from './agent-server.config';
import { agentRepositories } from './agent-repositories';
import { AgentCheckpointer } from './checkpointer';
import { AgentService } from './agent.service';
import { CronScheduler, THREAD_SWEEP_BATCH } from './cron-scheduler';
import { CronRepository } from './cron.repository';
import { CronService } from './cron.service';
import { loadGraphs, type LoadedGraph } from './graph-registry';
import { AGENT_SCHEMA, migrateAgentSchema } from './migrations';
import { Notifier } from './notifier';
import { RunWorker } from './run-worker';
import { StoreRepository } from './store.repository';
import { StoreService } from './store.service';
import { createTracing, type Tracing } from './tracing';
import { RunWebhooks } from './webhook';

/** Everything one agent-server process owns, started in order and closed in reverse. */
export class AgentRuntime {
  private readonly logger = new Logger('agent-server');
  private stopping: Promise<void> | null = null;

  private constructor(
    readonly pool: Pool,
    readonly notifier: Notifier,
    readonly graphs: Map<string, LoadedGraph>,
    readonly worker: RunWorker,
    readonly service: AgentService,
    readonly store: StoreService,
    readonly crons: CronService,
    private readonly scheduler: CronScheduler,
    private readonly tracing: Tracing | null,
    private readonly webhooks: RunWebhooks,
  ) {}

  static async start(config: AgentServerConfig): Promise<AgentRuntime> {
    const pool = new Pool({ connectionString: config.DATABASE_URL, max: config.DATABASE_POOL_SIZE });
    pool.on('error', (err) => new Logger('agent-server').warn({ msg: 'idle database connection failed', error: err.message }));
    instrumentPgPool(pool);
    try {
      const saver = new AgentCheckpointer(pool, AGENT_SCHEMA);
      await migrateAgentSchema(pool, () => saver.setup());
      const graphs = await loadGraphs(config.GRAPHS_CONFIG, saver);
      const repo = agentRepositories(pool);
      await repo.assistants.ensureDefaultAssistants([...graphs.values()]);
      const notifier = new Notifier(config.DATABASE_URL);
      await notifier.start();
      const tracing = createTracing(config);
      const outbound = new OutboundPolicy(config.OUTBOUND_ALLOWED_HOSTS);
      const webhooks = new RunWebhooks(outbound, undefined, config.OUTBOUND_PROXY);
      const worker = new RunWorker(repo, notifier, graphs, {
        concurrency: config.WORKER_CONCURRENCY,
        leaseSeconds: config.RUN_LEASE_SECONDS,
        maxAttempts: config.RUN_MAX_ATTEMPTS,
        durability: config.RUN_DURABILITY,
        callbacks: () => (tracing ? [tracing.tracer()] : []),
        checkpointer: saver,
        ended: webhooks,
      });
      worker.start();
      const service = new AgentService(repo, notifier, graphs, config.WORKER_CONCURRENCY > 0 ? worker : null, webhooks, outbound);
      const crons = new CronService(new CronRepository(pool), service);
      const scheduler = new CronScheduler(crons, config.CRON_TICK_MS, () => service.threads.sweepExpiredThreads(THREAD_SWEEP_BATCH));
      scheduler.start();
      return new AgentRuntime(pool, notifier, graphs, worker, service, new StoreService(new StoreRepository(pool)), crons, scheduler, tracing, webhooks);
    } catch (err) {
      await pool.end().catch(() => undefined);
      throw err;
    }
  }

  async ready(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  /**
   * Stop firing crons and taking runs (finishing the running ones briefly). First on shutdown, before the HTTP
   * server drains: the revisions of a deployment share its queue, so a replaced one whose clients still hold
   * streams would otherwise keep taking the runs its successor creates (with its old code and secrets).
   */
  stopTakingWork(graceMs = 10_000): Promise<void> {
    this.stopping ??= this.scheduler.stop().then(() => this.worker.stop(graceMs));
    return this.stopping;
  }

  /** Stop taking work, deliver webhooks under way, flush traces, close connections. */
  async close(graceMs = 10_000): Promise<void> {
    await this.stopTakingWork(graceMs);
    await this.webhooks.close();
    if (this.tracing) await this.tracing.flush().catch((err: Error) => this.logger.warn({ msg: 'trace flush failed', error: err.message }));
    await this.notifier.close();
    await this.pool.end();
  }
}
