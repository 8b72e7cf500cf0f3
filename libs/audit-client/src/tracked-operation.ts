import { applyDecorators, Injectable, SetMetadata, UseInterceptors, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { routeSpecOf, type Identity, type TrackedOperationSpec } from '@th/contracts';
import type { AuthRefusalListener } from '@th/auth';
import { auditRequestContext, type AuditRequestContext } from './audit-context';
import { AuditPublisher } from './audit.publisher';

export const TRACKED_OPERATION = 'th:tracked-operation';

export type TrackedOperationMeta = TrackedOperationSpec;

/** The tracked operation of the route that serves `req`, from the route table (libs/contracts/src/routes). */
export function trackedOperationOf(req: Request): TrackedOperationMeta | undefined {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? routeSpecOf(req.method, path)?.audit : undefined;
}

/**
 * Marks a route whose entry in the route table names a tracked operation (the route walker test checks that
 * the two agree). TrackedOperationInterceptor, applied to the marked route only, runs the handler as that
 * operation: the services' `audit.track` records it under the entry's name (they never name it themselves),
 * with the resources they know. Each attempt is recorded once: when the handler recorded no outcome itself, the
 * interceptor records it, a Failure when the handler threw (e.g. the body failed validation), a Success when it
 * returned, both naming the resource of the entry's `resourceParam`.
 *
 * Only the marked routes get the interceptor: a route with any interceptor at all goes through Nest's
 * interceptor chain, which wraps each step in `AsyncResource.bind`, and that kept each request alive through
 * young-generation collections (bench/RESULTS.md); a global interceptor put every route, ingest included, on
 * that path.
 */
export const TrackedOperation = () => applyDecorators(SetMetadata(TRACKED_OPERATION, true), UseInterceptors(TrackedOperationInterceptor));

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The interceptor of the routes marked @TrackedOperation (its dependencies come from AuditClientModule, which
 * is global): runs the handler in the route's audit context and records the outcome the handler did not.
 */
@Injectable()
export class TrackedOperationInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditPublisher,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    if (!this.reflector.get<boolean | undefined>(TRACKED_OPERATION, context.getHandler())) return next.handle();
    const req = context.switchToHttp().getRequest<Request & { identity?: Identity }>();
    const meta = trackedOperationOf(req);
    if (!meta) return next.handle();
    const store: AuditRequestContext = { recorded: new Set(), operation: meta.operation };
    return new Observable((subscriber) => {
      let inner: { unsubscribe(): void } | undefined;
      const values: unknown[] = [];
      auditRequestContext.run(store, () => {
        inner = next.handle().subscribe({
          next: (v) => values.push(v),
          complete: () => {
            const answer = () => {
              for (const v of values) subscriber.next(v);
              subscriber.complete();
            };
            if (store.recorded.size > 0) return answer();
            // Answered only once the Success is durable, like the services' own; if it cannot be recorded the request fails.
            recordTrackedOutcome(this.audit, meta, req, req.identity ?? null, { status: 'Success' }).then(answer, (err: unknown) => subscriber.error(err));
          },
          error: (err: unknown) => {
            if (store.recorded.size > 0) {
              subscriber.error(err);
              return;
            }
            recordTrackedOutcome(this.audit, meta, req, req.identity ?? null, { status: 'Failure', error: err }).then(
              () => subscriber.error(err),
              // The attempt failed anyway; an unrecordable audit event must not hide the original error.
              () => subscriber.error(err),
            );
          },
        });
      });
      return () => inner?.unsubscribe();
    });
  }
}

type Outcome = { status: 'Success' } | { status: 'Failure'; error: unknown };

/** The route's outcome as the interceptor and the refusal recorder see it, naming the resource of the entry's path parameter. */
function recordTrackedOutcome(audit: AuditPublisher, meta: TrackedOperationMeta, req: Request, identity: Identity | null, outcome: Outcome): Promise<void> {
  const param = meta.resourceParam ? req.params?.[meta.resourceParam] : undefined;
  const resources = meta.resourceType && typeof param === 'string' && UUID.test(param) ? [{ type: meta.resourceType, id: param }] : [];
  return audit.record({
    operation: meta.operation,
    identity,
    ...(identity ? { workspace_id: identity.tenant_id || null } : {}),
    resources,
    ...(outcome.status === 'Success' ? { status: 'Success' } : { status: 'Failure', error: outcome.error instanceof Error ? outcome.error.message : String(outcome.error) }),
    request: { method: req.method, path: (req.originalUrl ?? req.url).split('?')[0], ip: req.ip ?? null, user_agent: req.headers['user-agent'] ?? null },
  });
}

/**
 * Registered by AuditClientModule as AuthGuard's refusal listener: a request AuthGuard refuses (401/403) on a
 * route marked @TrackedOperation never reaches TrackedOperationInterceptor (guards run first), so the
 * Failure is recorded here, once per refused attempt.
 *
 * Only refusals with a known organization are recorded: a credential that was verified but may not do
 * this (a viewer key on a write, a key asking for another workspace, an organization-scoped key without
 * a workspace, a plan that lacks the feature). A request with no credential, or one that matches no
 * credential, has no organization, so its event could never be shown in any organization's audit log;
 * and recording it would let anyone without a credential write to the audit store at will. Such
 * attempts get their 401 and are not recorded.
 */
@Injectable()
export class TrackedOperationRefusalRecorder implements AuthRefusalListener {
  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditPublisher,
  ) {}

  async refused(context: ExecutionContext, identity: Identity | null, err: unknown): Promise<void> {
    if (context.getType() !== 'http' || !identity) return;
    if (!this.reflector.get<boolean | undefined>(TRACKED_OPERATION, context.getHandler())) return;
    const req = context.switchToHttp().getRequest<Request>();
    const meta = trackedOperationOf(req);
    if (!meta) return;
    // The attempt is refused anyway; an unrecordable audit event must not replace the 401/403.
    await recordTrackedOutcome(this.audit, meta, req, identity, { status: 'Failure', error: err }).catch(() => undefined);
  }
}
