import { z } from 'zod';
import { bool, clusterServiceConfigShape, port, secret, webConfigShape } from '@th/config';
import { rateLimitConfigShape, redisRateLimitConfigShape } from '@th/gateway';

/** Every setting this app reads from its environment (docker-compose.yml and deploy/k8s set them; config.spec.ts checks both). */
export const gatewayConfigSchema = z.object({
  ...clusterServiceConfigShape,
  ...webConfigShape,
  PORT: port(8080),
  DATABASE_URL: secret(z.string().url()),
  INGEST_URL: z.string().url(),
  QUERY_URL: z.string().url(),
  EXPORT_WORKER_URL: z.string().url().optional(),
  AUDIT_URL: z.string().url().optional(),
  CONTROL_PLANE_URL: z.string().url().optional(),
  BOOTSTRAP_API_KEY: secret(z.string().min(8).optional()),
  /** HS256 secret of session bearer tokens (POST /auth/login); without it bearer JWTs are refused. */
  SESSION_SECRET: secret(z.string().min(32).optional()),
  SESSION_TTL_SECONDS: z.coerce.number().int().min(60).default(12 * 3600),
  /** Key of workspace secret values at rest (AES-256-GCM); without it, derived from INTERNAL_SIGNING_KEY. Never change it once secrets exist. */
  WORKSPACE_SECRETS_KEY: secret(z.string().min(16).optional()),
  DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: bool(false),
  INGEST_BATCH_SIZE_LIMIT: z.coerce.number().int().min(1).default(100),
  ...rateLimitConfigShape,
  ...redisRateLimitConfigShape,
});
export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
