import { z } from 'zod';
import { clusterServiceConfigShape, port, secret } from '@th/config';
import { controlPlaneConfigShape } from '@th/control-plane';

/** The control plane's own settings (beside the shared cluster service settings in controlPlaneConfigSchema). */
export const controlPlaneAppConfigSchema = z.object({
  ...controlPlaneConfigShape,
  DATABASE_URL: secret(z.string().url()),
  DATA_DIR: z.string().default('./.data'),
  INTERNAL_SIGNING_KEY: secret(z.string().min(16)),
});

/** Every setting the control-plane app reads from its environment: its own and its bus service's (config.spec.ts checks docker-compose.yml and deploy/k8s against it). */
export const controlPlaneConfigSchema = z.object({ ...clusterServiceConfigShape, PORT: port(8083), ...controlPlaneAppConfigSchema.shape });
