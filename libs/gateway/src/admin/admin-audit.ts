import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { Identity } from '@th/contracts';
import { AuditPublisher, currentTrackedOperation, type AuditInput } from '@th/audit-client';

type Resources = AuditInput['resources'];

/**
 * Runs an administrative operation as the route's tracked operation (named in the route table): parsing, permission checks and the write all
 * happen inside, so a refused or invalid attempt is recorded as Failure, a completed one as Success.
 */
@Injectable()
export class AdminAudit {
  constructor(private readonly audit: AuditPublisher) {}

  run<T>(identity: Identity, req: Request, fn: () => Promise<T>, resourcesOf?: (r: T) => Resources, resources?: Resources): Promise<T> {
    return this.audit.track(
      {
        identity,
        workspace_id: identity.tenant_id || null,
        resources,
        request: { method: req.method, path: req.originalUrl.split('?')[0], ip: req.ip ?? null, user_agent: req.headers['user-agent'] ?? null },
      },
      fn,
      resourcesOf,
    );
  }

  /**
   * Like run, but the Success is recorded in the organization `orgOf` names (e.g. the inviting
   * organization of a claimed invitation); a Failure stays with the caller's own organization.
   */
  async runIn<T>(identity: Identity, req: Request, fn: () => Promise<T>, orgOf: (r: T) => string, resourcesOf: (r: T) => Resources): Promise<T> {
    const operation = currentTrackedOperation();
    const request = { method: req.method, path: req.originalUrl.split('?')[0], ip: req.ip ?? null, user_agent: req.headers['user-agent'] ?? null };
    let result: T;
    try {
      result = await fn();
    } catch (err) {
      await this.audit.record({ operation, identity, workspace_id: identity.tenant_id || null, resources: [], status: 'Failure', error: err instanceof Error ? err.message : String(err), request });
      throw err;
    }
    await this.audit.record({ operation, identity, organization_id: orgOf(result), workspace_id: null, resources: resourcesOf(result), status: 'Success', request });
    return result;
  }
}
