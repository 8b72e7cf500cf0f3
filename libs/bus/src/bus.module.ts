import { DynamicModule, Global, Module, OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthRegistry } from '@th/platform';
import { EventBus } from './bus';
import { BusTransport } from './bus.transport';
import { InProcessBus } from './in-process.bus';
import { KafkaBus, type KafkaBusOptions } from './kafka.bus';

class BusShutdown implements OnApplicationShutdown {
  constructor(private readonly bus: EventBus) {}
  async onApplicationShutdown(): Promise<void> {
    await this.bus.close();
  }
}

/**
 * Provides the EventBus: Kafka when brokers are configured, the in-process bus otherwise, and the BusTransport
 * that delivers it to the app's `@EventPattern` consumers (see startBusConsumers). The audit publisher on it
 * is AuditClientModule's (libs/audit-client).
 */
@Global()
@Module({})
export class BusModule {
  /** `service`: the app's name (AuditClientModule.forRoot names the audit events' publisher). */
  static forRoot(opts: { kafka?: KafkaBusOptions; instance?: EventBus; service?: string }): DynamicModule {
    const bus = opts.instance ?? (opts.kafka ? new KafkaBus(opts.kafka) : new InProcessBus());
    return {
      module: BusModule,
      providers: [
        { provide: EventBus, useValue: bus },
        { provide: BusTransport, inject: [ModuleRef], useFactory: (ref: ModuleRef) => new BusTransport(bus, ref) },
        {
          provide: BusShutdown,
          inject: [HealthRegistry],
          useFactory: (health: HealthRegistry) => {
            health.register({ name: 'bus', check: () => bus.healthy() });
            return new BusShutdown(bus);
          },
        },
      ],
      exports: [EventBus, BusTransport],
    };
  }
}
