import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { z } from 'zod';
import { AuthGuard, IDENTITY_RESOLVER } from '@th/auth';
import { commonConfigShape, internalAuthShape, loadConfig, port, secret } from '@th/config';
import { openServiceDataSource } from '@th/database';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, GatewayModule, IdentityService, gatewayProxy } from '@th/gateway';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';

const configSchema = z.object({
  ...commonConfigShape,
  ...internalAuthShape,
  PORT: port(8080),
  HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: secret(z.string().url()),
  INGEST_URL: z.string().url(),
  QUERY_URL: z.string().url(),
  EXPORT_WORKER_URL: z.string().url().optional(),
  AUDIT_URL: z.string().url().optional(),
  CONTROL_PLANE_URL: z.string().url().optional(),
  BOOTSTRAP_API_KEY: secret(z.string().min(8).optional()),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
  INGEST_BATCH_SIZE_LIMIT: z.coerce.number().int().min(1).default(100),
});

runUntilSignal('gateway', async () => {
  const config = loadConfig(configSchema, process.env);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
  const gateway = GatewayModule.forRoot(db, { version: config.SERVICE_VERSION, maxBodyBytes: config.MAX_BODY_BYTES, batchSizeLimit: config.INGEST_BATCH_SIZE_LIMIT });
  @Module({
    imports: [HealthModule, gateway],
    providers: [
      { provide: IDENTITY_RESOLVER, useExisting: IdentityService },
      { provide: APP_GUARD, useClass: AuthGuard },
    ],
  })
  class GatewayAppModule {}
  // The proxy needs the identity service before Nest routes exist: build it from the same DataSource.
  const identity = new IdentityService(db);
  const app = await createHttpApp(GatewayAppModule, {
    service: 'gateway',
    logLevel: config.LOG_LEVEL,
    maxBodyBytes: config.MAX_BODY_BYTES,
    beforeBody: [
      gatewayProxy({
        upstreams: {
          ingest: config.INGEST_URL,
          query: config.QUERY_URL,
          exportWorker: config.EXPORT_WORKER_URL,
          audit: config.AUDIT_URL,
          controlPlane: config.CONTROL_PLANE_URL,
        },
        resolver: identity,
        signingKey: config.INTERNAL_SIGNING_KEY,
        maxBodyBytes: config.MAX_BODY_BYTES,
      }),
    ],
  });
  if (config.BOOTSTRAP_API_KEY) await identity.bootstrap(config.BOOTSTRAP_API_KEY);
  return listen(app, config.HOST, config.PORT, () => db.destroy());
});
