import type { AuditOperation } from '@th/contracts';
import { AsyncLocalStorage } from 'node:async_hooks';

/** Per-request marker: the operation being performed and which outcomes were already recorded for it. */
export interface AuditRequestContext {
  recorded: Set<'Success' | 'Failure' | 'Unknown'>;
  /** The tracked operation: the route's (from the route table), or the one an out-of-route caller named. */
  operation: AuditOperation;
}

/** Set by TrackedOperationInterceptor around a tracked route's handler, or by inTrackedOperation; AuditPublisher reads and marks it. */
export const auditRequestContext = new AsyncLocalStorage<AuditRequestContext>();

/** The tracked operation being performed (the route's, or an out-of-route caller's). */
export function currentTrackedOperation(): AuditOperation {
  const store = auditRequestContext.getStore();
  if (!store)
    throw new Error(
      'No tracked operation here: the route is not marked @TrackedOperation() or has no audit entry in the route table; a caller outside a tracked route names it with inTrackedOperation()',
    );
  return store.operation;
}

/**
 * Runs `fn` as the tracked operation `operation`, for a caller outside any tracked route (a job, a consumer, a
 * spec calling a service directly): the services' `audit.track` inside records it. Inside a tracked route the
 * route table's entry decides the operation, so naming another one here throws: a route that records another
 * operation says so in its entry.
 */
export function inTrackedOperation<T>(operation: AuditOperation, fn: () => Promise<T>): Promise<T> {
  const outer = auditRequestContext.getStore();
  if (outer) return Promise.reject(new Error(`inTrackedOperation('${operation}') inside the tracked operation '${outer.operation}': the route's entry in the route table names what it records`));
  return auditRequestContext.run({ recorded: new Set(), operation }, fn);
}
