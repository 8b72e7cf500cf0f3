import { randomUUID } from 'node:crypto';
import { TOPICS, type AuditOperation, type AuditRecord, type Identity } from '@th/contracts';
import { EventBus } from '@th/bus';
import { auditRequestContext, currentTrackedOperation } from './audit-context';

export interface AuditInput {
  operation: AuditOperation;
  identity: Identity | null;
  /** The affected resources; ids are UUIDs. */
  resources: { type: string; id: string }[];
  status?: AuditRecord['status'];
  error?: string | null;
  request?: AuditRecord['request'];
  details?: Record<string, unknown>;
  /** Overrides the identity's organization/workspace (e.g. an organization-scoped call). */
  organization_id?: string | null;
  workspace_id?: string | null;
}

/**
 * Publishes the spec's tracked operations to the audit topic. Every service uses this one class,
 * so every audit event has the same native shape whichever service performed the operation.
 */
export class AuditPublisher {
  constructor(
    private readonly bus: EventBus,
    private readonly service: string,
  ) {}

  build(input: AuditInput): AuditRecord {
    const id = input.identity;
    return {
      id: randomUUID(),
      time: new Date().toISOString(),
      operation: input.operation,
      status: input.status ?? 'Success',
      organization_id: input.organization_id !== undefined ? input.organization_id : (id?.organization_id ?? null),
      workspace_id: input.workspace_id !== undefined ? input.workspace_id : (id?.tenant_id ?? null),
      user_id: id?.user_id ?? null,
      credential_id: id && id.credential_type !== 'session' ? id.credential_id : null,
      credential_type: id?.credential_type ?? null,
      resources: input.resources,
      service: this.service,
      ...(input.request ? { request: input.request } : {}),
      ...(input.error !== undefined ? { error: input.error } : {}),
      ...(input.details ? { details: input.details } : {}),
    };
  }

  /** Resolves once the event is durable on the bus. Keyed by organization so one organization's events stay in order. */
  async record(input: AuditInput): Promise<void> {
    const store = auditRequestContext.getStore();
    // Inside a tracked operation only that operation is recorded: a route records its entry's, never a service's own.
    if (store && store.operation !== input.operation) throw new Error(`Cannot record '${input.operation}' inside the tracked operation '${store.operation}': the route's entry in the route table names what it records`);
    const rec = this.build(input);
    await this.bus.publish(TOPICS.audit, [{ key: rec.organization_id ?? 'none', value: rec }]);
    // Tells TrackedOperationInterceptor that this request's outcome is recorded (no second event).
    store?.recorded.add(rec.status);
  }

  /**
   * Runs the tracked operation being performed (the route's, from its entry in the route table; or the one an
   * out-of-route caller named with inTrackedOperation) and records its outcome: Success with the resources `fn`
   * reports, or Failure with the error's message (the error is rethrown unchanged). Outside both it throws before
   * running `fn`: an operation is never recorded under a name nobody declared.
   */
  async track<T>(
    // No operation here: it is the one being performed (a service naming its own could disagree with its route's).
    input: Omit<AuditInput, 'operation' | 'resources' | 'status' | 'error'> & { operation?: never; resources?: AuditInput['resources'] },
    fn: () => Promise<T>,
    resourcesOf?: (result: T) => AuditInput['resources'],
  ): Promise<T> {
    const operation = currentTrackedOperation();
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      await this.record({ ...input, operation, resources: input.resources ?? [], status: 'Failure', error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
    await this.record({ ...input, operation, resources: resourcesOf ? resourcesOf(result) : (input.resources ?? []), status: 'Success' });
    return result;
  }
}
