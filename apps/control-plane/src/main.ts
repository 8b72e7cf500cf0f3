import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Module } from '@nestjs/common';
import { AuditClientModule } from '@th/audit-client';
import { signedIdentityProviders } from '@th/auth';
import { BusModule, EventBus, kafkaOptionsFromConfig, startBusConsumers } from '@th/bus';
import { loadConfig } from '@th/config';
import { openServiceDataSource } from '@th/database';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import {
  CONTROL_PLANE_ENTITIES,
  CONTROL_PLANE_MIGRATIONS,
  CONTROL_PLANE_SCHEMA,
  ControlPlaneModule,
  controlPlaneOptionsFromConfig,
} from '@th/control-plane';
import { controlPlaneConfigSchema } from './config';

/** Talks to the other services only over Kafka (and the gateway's signed identity). */
runUntilSignal('control-plane', async () => {
  const config = loadConfig(controlPlaneConfigSchema, process.env);
  @Module({
    imports: [
      HealthModule,
      BusModule.forRoot({ kafka: kafkaOptionsFromConfig(config, 'control-plane'), service: 'control-plane' }),
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
    providers: [
      ...signedIdentityProviders(config.INTERNAL_SIGNING_KEY),
    ],
  })
  class ControlPlaneAppModule {}
  const app = await createHttpApp(ControlPlaneAppModule, { service: 'control-plane', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config });
  await app.get(EventBus).healthy(); // joins the bus: topics exist, producer connected
  await startBusConsumers(app);
  return listen(app, config.HOST, config.PORT);
});
