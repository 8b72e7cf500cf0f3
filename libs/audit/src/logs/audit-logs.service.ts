import { Inject, Injectable } from '@nestjs/common';
import {
  auditRecordSchema,
  type AuditChainVerification,
  type AuditLogsQuery,
  type AuditLogsResponse,
  type Identity,
} from '@th/contracts';
import { DomainError, ErrorCode, ValidationFailed, forbidden } from '@th/platform';
import { ChainHasher } from '../chain/chain-hash';
import { verifyChain } from '../chain/chain-verifier';
import { renderApiActivity } from '../chain/ocsf';
import { AUDIT_OPTIONS, type AuditOptions } from '../audit.options';
import { AuditRetentionService } from '../retention/audit-retention.service';
import { AuditRepository } from '../store/audit.repository';

interface Cursor {
  t: string;
  i: string;
}

const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

function decodeCursor(raw: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Partial<Cursor>;
    if (typeof c.t === 'string' && typeof c.i === 'string' && !Number.isNaN(Date.parse(c.t))) return { t: c.t, i: c.i };
  } catch {
    // reported below
  }
  throw new ValidationFailed([{ loc: ['query', 'cursor'], msg: 'cursor is not a next_cursor returned by this endpoint', type: 'value_error' }]);
}

/** GET /api/v1/audit-logs and the chain check: who may read, what they read. */
@Injectable()
export class AuditLogsService {
  constructor(
    private readonly repo: AuditRepository,
    private readonly retention: AuditRetentionService,
    private readonly hasher: ChainHasher,
    @Inject(AUDIT_OPTIONS) private readonly options: AuditOptions,
  ) {}

  /**
   * The organization the caller may read audit logs of: an Enterprise organization with audit logs
   * enabled, and a caller holding organization:manage. Anything else is 403.
   */
  authorize(identity: Identity, organizationHeader: string | undefined): string {
    const org = organizationHeader?.trim().toLowerCase() || identity.organization_id;
    if (org !== identity.organization_id.toLowerCase()) throw forbidden(`These credentials cannot act in organization ${org}`);
    if (identity.plan !== 'enterprise') throw forbidden('Audit logs require an Enterprise plan');
    const features = identity.org_features ?? {};
    // A stored organization setting wins; the installation default applies to non-personal organizations only.
    const enabled = features.can_use_audit_logs ?? (this.options.defaultOrgFeatureCanUseAuditLogs && features.is_personal !== true);
    if (!enabled) throw forbidden('Audit logs are not enabled for this organization (can_use_audit_logs)');
    if (!identity.permissions.includes('organization:manage')) {
      throw forbidden('Reading audit logs requires the organization:manage permission (Organization Admin or Organization Operator)');
    }
    return identity.organization_id;
  }

  async list(identity: Identity, organizationHeader: string | undefined, q: AuditLogsQuery): Promise<AuditLogsResponse> {
    const org = this.authorize(identity, organizationHeader);
    const after = q.cursor ? decodeCursor(q.cursor) : undefined;
    const rows = await this.repo.list({
      organization_id: org,
      start: q.start_time,
      end: q.end_time,
      notBefore: this.retention.cutoff(new Date()),
      operations: q.operations,
      after: after ? { time: after.t, id: after.i } : undefined,
      limit: q.limit + 1,
    });
    const page = rows.slice(0, q.limit);
    const items = page.map((row) => {
      const parsed = auditRecordSchema.safeParse(JSON.parse(row.record));
      if (!parsed.success) throw new DomainError(ErrorCode.Internal, `stored audit event ${row.id} is not a valid record`);
      return renderApiActivity(parsed.data, { seq: row.seq, prev_hash: row.prev_hash, hash: row.hash, stored_at: row.stored_at }, this.options.productVersion);
    });
    const last = page[page.length - 1];
    return { items, next_cursor: rows.length > q.limit && last ? encodeCursor({ t: last.time_key, i: last.id }) : null };
  }

  async verify(identity: Identity, organizationHeader: string | undefined): Promise<AuditChainVerification> {
    const org = this.authorize(identity, organizationHeader);
    const r = await verifyChain(this.repo, this.hasher, org);
    return { organization_id: org, ok: r.ok, events_checked: r.events_checked, anchor: r.anchor, head: r.head, first_break: r.first_break };
  }
}
