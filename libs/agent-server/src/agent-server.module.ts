import { Inject, Injectable, Module, type BeforeApplicationShutdown, type DynamicModule, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HealthRegistry } from '@th/platform';
import { AGENT_SERVER_CONFIG, type AgentServerConfig } from './agent-server.config';
import { AGENT_SERVICE } from './agent-service.token';
import { AssistantsController } from './assistants.controller';
import { HealthOkController } from './health-ok.controller';
import { RunsController } from './runs.controller';
import { ThreadsController } from './threads.controller';
import { AgentRuntime } from './agent-runtime';
import { CRON_SERVICE, CronsController } from './cron.controller';
import { STORE_SERVICE, StoreController } from './store.controller';

const AGENT_RUNTIME = Symbol('AGENT_RUNTIME');

@Injectable()
class AgentLifecycle implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  constructor(
    @Inject(AGENT_RUNTIME) private readonly runtime: AgentRuntime,
    private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.health.register({ name: 'postgres', check: () => this.runtime.ready() });
  }

  /** Nest closes the HTTP server (waiting for open streams) between this hook and the next. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.runtime.stopTakingWork();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.runtime.close();
  }
}

/**
 * The agent server ({deployment_url}): assistants, threads, runs, crons and the store over the graphs of one
 * deployment, with PostgreSQL as record, queue and checkpoint store. Needs no bus.
 */
@Module({})
export class AgentServerModule {
  static forRoot(config: AgentServerConfig): DynamicModule {
    return {
      module: AgentServerModule,
      controllers: [HealthOkController, AssistantsController, ThreadsController, RunsController, StoreController, CronsController],
      providers: [
        { provide: AGENT_SERVER_CONFIG, useValue: config },
        { provide: AGENT_RUNTIME, useFactory: () => AgentRuntime.start(config) },
        { provide: AGENT_SERVICE, useFactory: (rt: AgentRuntime) => rt.service, inject: [AGENT_RUNTIME] },
        { provide: STORE_SERVICE, useFactory: (rt: AgentRuntime) => rt.store, inject: [AGENT_RUNTIME] },
        { provide: CRON_SERVICE, useFactory: (rt: AgentRuntime) => rt.crons, inject: [AGENT_RUNTIME] },
        { provide: AgentLifecycle, useClass: AgentLifecycle },
      ],
    };
  }
}
