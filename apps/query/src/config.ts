import { z } from 'zod';
import { clickhouseConfigShape, commonConfigShape, internalAuthShape, kafkaConfigShape, port, secret } from '@th/config';

/** Every setting this app reads from its environment (docker-compose.yml and deploy/k8s set them; config.spec.ts checks both). */
export const queryConfigSchema = z.object({
  ...commonConfigShape,
  ...internalAuthShape,
  ...kafkaConfigShape,
  ...clickhouseConfigShape,
  PORT: port(8082),
  HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: secret(z.string().url()),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
});
export type QueryConfig = z.infer<typeof queryConfigSchema>;
