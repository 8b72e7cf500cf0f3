/** What the host app configures (parsed from its environment by @th/config). */
export interface AuditOptions {
  /** Reported as metadata.product.version. */
  productVersion: string;
  /** DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: audit logs for every non-personal organization without its own setting. */
  defaultOrgFeatureCanUseAuditLogs: boolean;
  /** AUDIT_RETENTION_DAYS: events older than this are not served and are removed by the retention job (at most 400). */
  retentionDays: number;
  /** AUDIT_RETENTION_INTERVAL_MINUTES: how often the retention job runs; 0 turns the schedule off. */
  retentionIntervalMinutes: number;
  /** AUDIT_CHAIN_KEY: the HMAC key of the hash chains (kept out of the database). */
  chainKey: string;
  /** Convert chains stored before chain keys once at start (the standalone service, in the start that generates its key). */
  rekeyUnkeyedChains?: boolean;
}

export const AUDIT_OPTIONS = Symbol('AUDIT_OPTIONS');
export const MAX_RETENTION_DAYS = 400;
