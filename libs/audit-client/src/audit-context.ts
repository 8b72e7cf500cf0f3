import { AsyncLocalStorage } from 'node:async_hooks';

/** Per-request marker: which audit outcomes the handler itself already recorded for this request. */
export interface AuditRequestContext {
  recorded: Set<'Success' | 'Failure' | 'Unknown'>;
}

/** Set by TrackedOperationInterceptor around a tracked route's handler; AuditPublisher.record marks it. */
export const auditRequestContext = new AsyncLocalStorage<AuditRequestContext>();
