import { randomUUID } from 'node:crypto';
import type { AuditRecord } from '@th/contracts';

/** A valid native audit record for tests; fields may be overridden. */
export function auditRecord(org: string | null, over: Partial<AuditRecord> = {}): AuditRecord {
  return {
    id: randomUUID(),
    time: new Date().toISOString(),
    operation: 'create_api_key',
    status: 'Success',
    organization_id: org,
    workspace_id: randomUUID(),
    user_id: randomUUID(),
    credential_id: randomUUID(),
    credential_type: 'api_key',
    resources: [{ type: 'api_key', id: randomUUID() }],
    service: 'gateway',
    ...over,
  };
}
