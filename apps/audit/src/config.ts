import { z } from 'zod';
import { bool, clusterServiceConfigShape, port, secret } from '@th/config';

/** HMAC key of the audit hash chains; never stored in the database. At least 32 characters (`openssl rand -hex 32`). */
const AUDIT_CHAIN_KEY = secret(z.string().min(32));

export const auditConfigSchema = z.object({
  ...clusterServiceConfigShape,
  PORT: port(8085),
  DATABASE_URL: secret(z.string().url()),
  /** Audit logs for every non-personal organization that has no can_use_audit_logs setting of its own. */
  DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: bool(false),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(400).default(400),
  /** How often expired audit events are removed; 0 turns the job off. */
  AUDIT_RETENTION_INTERVAL_MINUTES: z.coerce.number().int().min(0).default(60),
  AUDIT_CHAIN_KEY,
});
export type AuditConfig = z.infer<typeof auditConfigSchema>;

/** The verify command needs only the database and the chain key. */
export const auditVerifyConfigSchema = z.object({ DATABASE_URL: secret(z.string().url()), AUDIT_CHAIN_KEY });
