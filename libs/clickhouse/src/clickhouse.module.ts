import { DynamicModule, Global, Module, OnApplicationShutdown } from '@nestjs/common';
import { HealthRegistry } from '@th/platform';
import { ClickHouse } from './clickhouse.client';

class ClickHouseLifecycle implements OnApplicationShutdown {
  constructor(
    private readonly ch: ClickHouse,
    private readonly ownsClient: boolean,
  ) {}
  async onApplicationShutdown(): Promise<void> {
    if (this.ownsClient) await this.ch.close();
  }
}

/** Provides the ClickHouse client (already connected and migrated by the app's main). */
@Global()
@Module({})
export class ClickHouseModule {
  static forRoot(ch: ClickHouse, opts: { ownsClient?: boolean } = {}): DynamicModule {
    return {
      module: ClickHouseModule,
      providers: [
        { provide: ClickHouse, useValue: ch },
        {
          provide: ClickHouseLifecycle,
          inject: [HealthRegistry],
          useFactory: (health: HealthRegistry) => {
            health.register({ name: 'clickhouse', check: () => ch.ping() });
            return new ClickHouseLifecycle(ch, opts.ownsClient ?? true);
          },
        },
      ],
      exports: [ClickHouse],
    };
  }
}
