import { z } from 'zod';
import { clickhouseConfigShape, clusterServiceConfigShape, outboundConfigShape, port, secret } from '@th/config';

/** Every setting this app reads from its environment (docker-compose.yml and deploy/k8s set them; config.spec.ts checks both). */
export const queryConfigSchema = z.object({
  ...clusterServiceConfigShape,
  ...clickhouseConfigShape,
  PORT: port(8082),
  DATABASE_URL: secret(z.string().url()),
  ...outboundConfigShape,
  /** Seals prompt webhooks' signing secrets and headers at rest; changing it makes the stored ones unreadable. */
  PROMPT_WEBHOOK_SECRETS_KEY: secret(z.string().min(16)),
});
export type QueryConfig = z.infer<typeof queryConfigSchema>;
