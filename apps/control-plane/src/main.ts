import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { runBusService } from '@th/bus';
import { loadConfig, secret } from '@th/config';
import { openServiceDataSource } from '@th/database';
import {
  CONTROL_PLANE_ENTITIES,
  CONTROL_PLANE_MIGRATIONS,
  CONTROL_PLANE_SCHEMA,
  ControlPlaneModule,
  controlPlaneConfigShape,
  controlPlaneOptionsFromConfig,
} from '@th/control-plane';

const config = loadConfig(
  z.object({ ...controlPlaneConfigShape, DATABASE_URL: secret(z.string().url()), DATA_DIR: z.string().default('./.data'), INTERNAL_SIGNING_KEY: secret(z.string().min(16)) }),
  process.env,
);

runBusService(
  'control-plane',
  8083,
  ControlPlaneModule.forRoot(
    () => openServiceDataSource({ url: config.DATABASE_URL, schema: CONTROL_PLANE_SCHEMA, entities: CONTROL_PLANE_ENTITIES, migrations: CONTROL_PLANE_MIGRATIONS }),
    controlPlaneOptionsFromConfig(config, {
      databaseUrl: config.DATABASE_URL,
      dataDir: config.DATA_DIR,
      // Without CONTROL_PLANE_SECRETS_KEY, a key derived from the cluster's signing key (set a separate one in production).
      secretsKey: createHash('sha256').update(`control-plane-secrets:${config.INTERNAL_SIGNING_KEY}`).digest('base64url'),
      env: process.env,
    }),
  ),
);
