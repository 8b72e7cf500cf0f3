import { z } from 'zod';
import { zonedDateTime } from './common.schema';
import { AUDIT_STATUSES, TRACKED_OPERATIONS, auditRecordSchema } from './audit.schema';

const OPERATION_SET: ReadonlySet<string> = new Set(TRACKED_OPERATIONS);

/** One `operations` value; an unknown name is refused by name. */
const operationParam = z.string().refine((v) => OPERATION_SET.has(v), {
  error: (iss) => `unknown operation "${String(iss.input)}": not a tracked api.operation`,
});

const isoTime = zonedDateTime('must be an ISO 8601 date-time with a time zone (e.g. 2026-11-22T10:00:00Z)');

/** GET /api/v1/audit-logs query. start_time is inclusive, end_time exclusive, so adjacent windows never overlap. */
export const auditLogsQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    start_time: isoTime.optional(),
    end_time: isoTime.optional(),
    /** Repeatable: ?operations=a&operations=b. */
    operations: z
      .union([operationParam, z.array(operationParam)])
      .optional()
      .transform((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v])),
    /** The `next_cursor` of the previous page (same filters). */
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict()
  .superRefine((q, ctx) => {
    if (q.start_time && q.end_time && Date.parse(q.end_time) < Date.parse(q.start_time)) {
      ctx.addIssue({ code: 'custom', path: ['end_time'], message: `end_time (${q.end_time}) is before start_time (${q.start_time})` });
    }
  });
export type AuditLogsQuery = z.infer<typeof auditLogsQuerySchema>;

/** The OCSF 1.7.0 API Activity event (class_uid 6003) the audit service renders from a stored record. */
export const apiActivityEventSchema = z.object({
  category_uid: z.literal(6),
  category_name: z.literal('Application Activity'),
  class_uid: z.literal(6003),
  class_name: z.literal('API Activity'),
  /** 1 Create, 2 Read, 3 Update, 4 Delete, 99 Other: from the operation's verb. */
  activity_id: z.number().int(),
  activity_name: z.string(),
  /** class_uid * 100 + activity_id. */
  type_uid: z.number().int(),
  type_name: z.string(),
  severity_id: z.literal(1),
  severity: z.literal('Informational'),
  status: z.enum(AUDIT_STATUSES),
  /** 0 Unknown, 1 Success, 2 Failure. */
  status_id: z.number().int(),
  status_detail: z.string().nullable(),
  /** Milliseconds since the epoch (OCSF timestamp_t). */
  time: z.number().int(),
  time_dt: z.string(),
  metadata: z.object({
    uid: z.string(),
    version: z.literal('1.7.0'),
    product: z.object({ name: z.string(), vendor_name: z.string(), version: z.string() }),
    logged_time: z.number().int(),
  }),
  actor: z.object({
    user: z.object({ uid: z.string().nullable(), credential_uid: z.string().nullable(), type: z.string().nullable() }),
  }),
  api: z.object({ operation: z.string(), service: z.object({ name: z.string() }) }),
  /** The affected resources, each identified by its UUID. */
  resources: z.array(z.object({ uid: z.string(), type: z.string() })),
  src_endpoint: z.object({ ip: z.string().nullable() }).optional(),
  http_request: z
    .object({ http_method: z.string().optional(), url: z.object({ path: z.string().optional() }), user_agent: z.string().nullable().optional() })
    .optional(),
  unmapped: z.object({
    original_audit_log: auditRecordSchema,
    /** Where the event sits in its organization's hash chain. */
    chain: z.object({ seq: z.number().int(), prev_hash: z.string(), hash: z.string() }),
  }),
});
export type ApiActivityEvent = z.infer<typeof apiActivityEventSchema>;

export const auditLogsResponseSchema = z.object({
  items: z.array(apiActivityEventSchema),
  /** Pass as `cursor` (with the same filters) for the next page; null on the last page. */
  next_cursor: z.string().nullable(),
});
export type AuditLogsResponse = z.infer<typeof auditLogsResponseSchema>;

/** GET /api/v1/audit-logs/verify: the organization's hash chain checked from its anchor to its head. */
export const auditChainVerificationSchema = z.object({
  organization_id: z.string(),
  ok: z.boolean(),
  events_checked: z.number().int(),
  /** The hash the first kept event chains to (genesis, or the last event removed by retention). */
  anchor: z.object({ seq: z.number().int(), hash: z.string() }),
  head: z.object({ seq: z.number().int(), hash: z.string() }),
  first_break: z.object({ seq: z.number().int(), event_id: z.string().nullable(), reason: z.string() }).nullable(),
});
export type AuditChainVerification = z.infer<typeof auditChainVerificationSchema>;
