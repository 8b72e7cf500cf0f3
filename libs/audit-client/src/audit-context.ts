import type { AuditOperation } from '@th/contracts';
import { AsyncLocalStorage } from 'node:async_hooks';

/** Per-request marker: which audit outcomes the handler itself already recorded for this request. */
export interface AuditRequestContext {
  recorded: Set<'Success' | 'Failure' | 'Unknown'>;
  /** The route's tracked operation (from the route table). */
  operation: AuditOperation;
}

/** Set by TrackedOperationInterceptor around a tracked route's handler; AuditPublisher.record marks it. */
export const auditRequestContext = new AsyncLocalStorage<AuditRequestContext>();

/** The tracked operation of the route being served (for a handler that records its outcome itself). */
export function currentTrackedOperation(): AuditOperation {
  const store = auditRequestContext.getStore();
  if (!store) throw new Error('No tracked operation here: the route is not marked @TrackedOperation() or has no audit entry in the route table');
  return store.operation;
}
