import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { AuditOperation, Identity } from '@th/contracts';
import { AuditPublisher, type AuditInput } from '@th/bus';

type Resources = AuditInput['resources'];

/**
 * Runs an administrative operation as a tracked one: parsing, permission checks and the write all
 * happen inside, so a refused or invalid attempt is recorded as Failure, a completed one as Success.
 */
@Injectable()
export class AdminAudit {
  constructor(private readonly audit: AuditPublisher) {}

  run<T>(operation: AuditOperation, identity: Identity, req: Request, fn: () => Promise<T>, resourcesOf?: (r: T) => Resources, resources?: Resources): Promise<T> {
    return this.audit.track(
      {
        operation,
        identity,
        workspace_id: identity.tenant_id || null,
        resources,
        request: { method: req.method, path: req.originalUrl.split('?')[0], ip: req.ip ?? null, user_agent: req.headers['user-agent'] ?? null },
      },
      fn,
      resourcesOf,
    );
  }
}
