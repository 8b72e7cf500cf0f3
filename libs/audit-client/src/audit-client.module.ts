import { DynamicModule, Global, Module } from '@nestjs/common';
import { AUTH_REFUSAL_LISTENER } from '@th/auth';
import { EventBus } from '@th/bus';
import { AuditPublisher } from './audit.publisher';
import { TrackedOperationRefusalRecorder } from './tracked-operation';

/**
 * The AuditPublisher on the app's EventBus, and what @TrackedOperation routes need to record their Failure
 * events: the interceptor those routes apply (built with the AuditPublisher from here), and the listener of
 * AuthGuard's refusals, which come before any interceptor runs (401/403). Every app imports it next to BusModule.
 */
@Global()
@Module({})
export class AuditClientModule {
  /** `service` names the publisher in audit events. */
  static forRoot(opts: { service?: string } = {}): DynamicModule {
    return {
      module: AuditClientModule,
      providers: [
        { provide: AuditPublisher, inject: [EventBus], useFactory: (bus: EventBus) => new AuditPublisher(bus, opts.service ?? 'standalone') },
        { provide: AUTH_REFUSAL_LISTENER, useClass: TrackedOperationRefusalRecorder },
      ],
      exports: [AuditPublisher, AUTH_REFUSAL_LISTENER],
    };
  }
}
