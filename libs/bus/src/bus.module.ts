import { DynamicModule, Global, Module, OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { HealthRegistry } from '@th/platform';
import { AuditPublisher } from './audit.publisher';
import { EventBus } from './bus';
import { BusTransport } from './bus.transport';
import { InProcessBus } from './in-process.bus';
import { KafkaBus, type KafkaBusOptions } from './kafka.bus';
import { AUTH_REFUSAL_LISTENER } from '@th/auth';
import { TrackedOperationRefusalRecorder } from './tracked-operation';

class BusShutdown implements OnApplicationShutdown {
  constructor(private readonly bus: EventBus) {}
  async onApplicationShutdown(): Promise<void> {
    await this.bus.close();
  }
}

/**
 * Provides the EventBus: Kafka when brokers are configured, the in-process bus otherwise; the
 * BusTransport that delivers it to the app's `@EventPattern` consumers (see startBusConsumers); the
 * AuditPublisher; and what @TrackedOperation routes need to record their Failure events (the
 * interceptor those routes apply, and the listener of AuthGuard's refusals).
 */
@Global()
@Module({})
export class BusModule {
  /** `service` names the publisher in audit events. */
  static forRoot(opts: { kafka?: KafkaBusOptions; instance?: EventBus; service?: string }): DynamicModule {
    const bus = opts.instance ?? (opts.kafka ? new KafkaBus(opts.kafka) : new InProcessBus());
    return {
      module: BusModule,
      providers: [
        { provide: EventBus, useValue: bus },
        { provide: BusTransport, inject: [ModuleRef], useFactory: (ref: ModuleRef) => new BusTransport(bus, ref) },
        { provide: AuditPublisher, useValue: new AuditPublisher(bus, opts.service ?? 'standalone') },
        // Every app joins the bus through this module, so every app records failed tracked operations: the
        // routes marked @TrackedOperation apply TrackedOperationInterceptor (built with AuditPublisher from
        // here), and the ones AuthGuard refuses before any interceptor runs (401/403) go through this listener.
        { provide: AUTH_REFUSAL_LISTENER, useClass: TrackedOperationRefusalRecorder },
        {
          provide: BusShutdown,
          inject: [HealthRegistry],
          useFactory: (health: HealthRegistry) => {
            health.register({ name: 'bus', check: () => bus.healthy() });
            return new BusShutdown(bus);
          },
        },
      ],
      exports: [EventBus, BusTransport, AuditPublisher, AUTH_REFUSAL_LISTENER],
    };
  }
}
