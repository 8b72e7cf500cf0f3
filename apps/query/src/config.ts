import { z } from 'zod';
import { clickhouseConfigShape, clusterServiceConfigShape, port, secret } from '@th/config';

/** Every setting this app reads from its environment (docker-compose.yml and deploy/k8s set them; config.spec.ts checks both). */
export const queryConfigSchema = z.object({
  ...clusterServiceConfigShape,
  ...clickhouseConfigShape,
  PORT: port(8082),
  DATABASE_URL: secret(z.string().url()),
});
export type QueryConfig = z.infer<typeof queryConfigSchema>;
