import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Module } from '@nestjs/common';
import { AuditClientModule } from '@th/audit-client';
import { runBusService } from '@th/bus';
import { loadConfig } from '@th/config';
import { openServiceDataSource } from '@th/database';
import {
  CONTROL_PLANE_ENTITIES,
  CONTROL_PLANE_MIGRATIONS,
  CONTROL_PLANE_SCHEMA,
  ControlPlaneModule,
  controlPlaneOptionsFromConfig,
} from '@th/control-plane';
import { controlPlaneAppConfigSchema } from './config';

const config = loadConfig(controlPlaneAppConfigSchema, process.env);

@Module({})
class ControlPlaneAppModule {}

runBusService('control-plane', 8083, {
  module: ControlPlaneAppModule,
  imports: [
    AuditClientModule.forRoot({ service: 'control-plane' }),
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
  ],
});
