import { z } from 'zod';
import { bool, clusterServiceConfigShape, port, secret } from '@th/config';

export const auditConfigSchema = z.object({
  ...clusterServiceConfigShape,
  PORT: port(8085),
  DATABASE_URL: secret(z.string().url()),
  /** Audit logs for every non-personal organization that has no can_use_audit_logs setting of its own. */
  DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: bool(false),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(400).default(400),
  /** How often expired audit events are removed; 0 turns the job off. */
  AUDIT_RETENTION_INTERVAL_MINUTES: z.coerce.number().int().min(0).default(60),
});
export type AuditConfig = z.infer<typeof auditConfigSchema>;

/** The verify command needs only the database. */
export const auditVerifyConfigSchema = z.object({ DATABASE_URL: secret(z.string().url()) });
