import { z } from 'zod';
import { bool, commonConfigShape, outboundConfigShape, port, secret, webConfigShape } from '@th/config';
import { rateLimitConfigShape } from '@th/gateway';
import { controlPlaneConfigShape } from '@th/control-plane';

export const standaloneConfigSchema = z.object({
  ...commonConfigShape,
  /** Private hosts tenant URLs (export destinations, git repositories, deployed servers' webhooks) may reach. */
  ...outboundConfigShape,
  ...webConfigShape,
  PORT: port(1984),
  /**
   * The published SDK links a local API's runs to http://localhost:3000: the service also listens there
   * (same app and API) when the port is free. 0 turns it off.
   */
  WEB_LINK_PORT: port(3000),
  HOST: z.string().default('127.0.0.1'),
  DATA_DIR: z.string().default('./.data'),
  BOOTSTRAP_API_KEY: secret(z.string().min(8).optional()),
  /** Use this PostgreSQL instead of the embedded one. */
  DATABASE_URL: secret(z.string().url().optional()),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
  INGEST_BATCH_SIZE_LIMIT: z.coerce.number().int().min(1).default(100),
  WRITER_MAX_BATCH: z.coerce.number().int().min(1).default(20_000),
  WRITER_CACHE_ENTRIES: z.coerce.number().int().min(0).default(100_000),
  /** Milliseconds rows that came in during an insert may gather before the next insert starts (0: at once). */
  WRITER_LINGER_MS: z.coerce.number().int().min(0).max(1_000).default(20),
  /**
   * Events waiting while a writer batch is busy before another batch starts alongside it; default
   * 2,000 with INGEST_ACK=stored (clients wait for the batch) and 6,000 with `logged` (larger parts).
   */
  WRITER_PARALLEL_BACKLOG: z.coerce.number().int().min(1).optional(),
  /**
   * When a run write gets its 2xx: `stored` once the writer has written the batch holding it to
   * ClickHouse; `logged` once it is fsynced to the bus's write-ahead log in DATA_DIR/bus (what Kafka's
   * acknowledgement is in the cluster form), the writer then making larger ClickHouse batches.
   */
  INGEST_ACK: z.enum(['stored', 'logged']).default('stored'),
  PRINT_BANNER: bool(true),
  /** AES-GCM key of stored bulk-export credentials; generated and kept in DATA_DIR/export-encryption-key when unset. */
  EXPORT_ENCRYPTION_KEY: secret(z.string().min(16).optional()),
  EXPORT_MAX_CONCURRENT: z.coerce.number().int().min(1).default(2),
  EXPORT_POLL_MS: z.coerce.number().int().min(100).default(5_000),
  /** Back-off before a failed export's next attempt (times the attempts so far). */
  EXPORT_RETRY_DELAY_MS: z.coerce.number().int().min(0).default(30_000),
  /** Rate limits with counters in this process (RATE_LIMIT_ENABLED, _REGION, _TRUSTED_PROXIES, _OVERRIDES). */
  ...rateLimitConfigShape,
  /** The deployment control plane (CONTROL_PLANE_*, AGENT_*, ROLLOUT_*...; see docs/control-plane.md). */
  ...controlPlaneConfigShape,
  /** Audit logs for every non-personal organization that has no can_use_audit_logs setting of its own. */
  DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: bool(false),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(400).default(400),
  /** How often expired audit events are removed; 0 turns the job off. */
  AUDIT_RETENTION_INTERVAL_MINUTES: z.coerce.number().int().min(0).default(60),
  /** Key of workspace secret values at rest; generated and kept in DATA_DIR/workspace-secrets-key when unset. */
  WORKSPACE_SECRETS_KEY: secret(z.string().min(16).optional()),
  /** Seals prompt webhooks' secrets and headers; generated once into DATA_DIR when unset. */
  PROMPT_WEBHOOK_SECRETS_KEY: secret(z.string().min(16).optional()),
  /** HMAC key of the audit hash chains (never in the database); generated and kept in DATA_DIR/audit-chain-key when unset. */
  AUDIT_CHAIN_KEY: secret(z.string().min(32).optional()),
  /** HS256 secret of session bearer tokens; generated and kept in DATA_DIR/session-secret when unset. */
  SESSION_SECRET: secret(z.string().min(32).optional()),
  SESSION_TTL_SECONDS: z.coerce.number().int().min(60).default(12 * 3600),
});
export type StandaloneConfig = z.infer<typeof standaloneConfigSchema>;
