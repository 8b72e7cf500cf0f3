import type { ApiActivityEvent, AuditRecord } from '@th/contracts';

const ACTIVITIES: Record<number, string> = { 1: 'Create', 2: 'Read', 3: 'Update', 4: 'Delete', 99: 'Other' };
const STATUS_IDS: Record<AuditRecord['status'], number> = { Unknown: 0, Success: 1, Failure: 2 };

/** The OCSF activity of an operation, from its verb (create_api_key → Create). */
export function activityIdOf(operation: string): number {
  const verb = operation.split('_', 1)[0];
  switch (verb) {
    case 'create':
    case 'add':
    case 'invite':
    case 'clone':
      return 1;
    case 'read':
    case 'list':
      return 2;
    case 'update':
    case 'set':
    case 'attach':
    case 'share':
    case 'unshare':
    case 'confirm':
    case 'cancel':
      return 3;
    case 'delete':
      return 4;
    default:
      return 99;
  }
}

export interface ChainPosition {
  seq: number;
  prev_hash: string;
  hash: string;
  stored_at: Date;
}

/** Renders a stored native record as an OCSF 1.7.0 API Activity event (class 6003). */
export function renderApiActivity(record: AuditRecord, chain: ChainPosition, productVersion: string): ApiActivityEvent {
  const activityId = activityIdOf(record.operation);
  const activityName = ACTIVITIES[activityId];
  const time = Date.parse(record.time);
  const event: ApiActivityEvent = {
    category_uid: 6,
    category_name: 'Application Activity',
    class_uid: 6003,
    class_name: 'API Activity',
    activity_id: activityId,
    activity_name: activityName,
    type_uid: 6003 * 100 + activityId,
    type_name: `API Activity: ${activityName}`,
    severity_id: 1,
    severity: 'Informational',
    status: record.status,
    status_id: STATUS_IDS[record.status],
    status_detail: record.error ?? null,
    time,
    time_dt: new Date(time).toISOString(),
    metadata: {
      uid: record.id,
      version: '1.7.0',
      product: { name: 'Tracehouse', vendor_name: 'Tracehouse', version: productVersion },
      logged_time: chain.stored_at.getTime(),
    },
    actor: { user: { uid: record.user_id, credential_uid: record.credential_id, type: record.credential_type } },
    api: { operation: record.operation, service: { name: record.service } },
    resources: record.resources.map((r) => ({ uid: r.id, type: r.type })),
    unmapped: { original_audit_log: record, chain: { seq: chain.seq, prev_hash: chain.prev_hash, hash: chain.hash } },
  };
  if (record.request) {
    if (record.request.ip !== undefined) event.src_endpoint = { ip: record.request.ip };
    event.http_request = { http_method: record.request.method, url: { path: record.request.path }, user_agent: record.request.user_agent };
  }
  return event;
}
