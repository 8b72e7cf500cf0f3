import { z } from 'zod';
import { bool, clickhouseConfigShape, clusterServiceConfigShape, outboundConfigShape, port, secret } from '@th/config';

/** Every setting this app reads from its environment (docker-compose.yml and deploy/k8s set them; config.spec.ts checks both). */
export const exportWorkerConfigSchema = z.object({
  ...clusterServiceConfigShape,
  ...clickhouseConfigShape,
  ...outboundConfigShape,
  PORT: port(8084),
  DATABASE_URL: secret(z.string().url()),
  /** AES-GCM key of stored destination credentials: every export-worker replica needs the same value. */
  EXPORT_ENCRYPTION_KEY: secret(z.string().min(16)),
  /** Run exports in this process (false: API only). */
  EXPORT_WORKER: bool(true),
  EXPORT_MAX_CONCURRENT: z.coerce.number().int().min(1).default(2),
  EXPORT_POLL_MS: z.coerce.number().int().min(100).default(5_000),
  /** How long a worker holds an export without a heartbeat: a worker that died is replaced after this. */
  EXPORT_LEASE_MS: z.coerce.number().int().min(1_000).default(60_000),
  EXPORT_ROWS_PER_FILE: z.coerce.number().int().min(1).default(250_000),
  EXPORT_RETRY_DELAY_MS: z.coerce.number().int().min(0).default(30_000),
});
export type ExportWorkerConfig = z.infer<typeof exportWorkerConfigSchema>;
