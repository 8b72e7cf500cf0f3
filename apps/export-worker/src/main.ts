import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { z } from 'zod';
import { AuthGuard, IDENTITY_RESOLVER, INTERNAL_SIGNING_KEY, SignedHeaderIdentityResolver } from '@th/auth';
import { BusModule, kafkaOptionsFromConfig } from '@th/bus';
import { ClickHouse, ClickHouseModule } from '@th/clickhouse';
import { bool, clickhouseConfigShape, commonConfigShape, internalAuthShape, kafkaConfigShape, loadConfig, port, secret } from '@th/config';
import { openServiceDataSource } from '@th/database';
import { EXPORTS_ENTITIES, EXPORTS_MIGRATIONS, EXPORTS_SCHEMA, ExportWorkerModule } from '@th/export-worker';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';

const configSchema = z.object({
  ...commonConfigShape,
  ...internalAuthShape,
  ...kafkaConfigShape,
  ...clickhouseConfigShape,
  PORT: port(8084),
  HOST: z.string().default('0.0.0.0'),
  DATABASE_URL: secret(z.string().url()),
  /** AES-GCM key of stored destination credentials: every export-worker replica needs the same value. */
  EXPORT_ENCRYPTION_KEY: secret(z.string().min(16)),
  /** Run exports in this process (false: API only). */
  EXPORT_WORKER: bool(true),
  EXPORT_MAX_CONCURRENT: z.coerce.number().int().min(1).default(2),
  EXPORT_POLL_MS: z.coerce.number().int().min(100).default(5_000),
  /** How long a worker holds an export without a heartbeat: a worker that died is replaced after this. */
  EXPORT_LEASE_MS: z.coerce.number().int().min(1_000).default(60_000),
  EXPORT_CHUNK_ROWS: z.coerce.number().int().min(100).default(5_000),
  EXPORT_ROWS_PER_FILE: z.coerce.number().int().min(1).default(250_000),
  EXPORT_RETRY_DELAY_MS: z.coerce.number().int().min(0).default(30_000),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
});

runUntilSignal('export-worker', async () => {
  const config = loadConfig(configSchema, process.env);
  const ch = await ClickHouse.fromConfig(config);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: EXPORTS_SCHEMA, entities: EXPORTS_ENTITIES, migrations: EXPORTS_MIGRATIONS });
  @Module({
    imports: [
      HealthModule,
      BusModule.forRoot({ service: 'export-worker', kafka: kafkaOptionsFromConfig(config, 'export-worker') }),
      ClickHouseModule.forRoot(ch),
      ExportWorkerModule.forRoot({
        dataSource: db,
        encryptionKey: config.EXPORT_ENCRYPTION_KEY,
        worker: config.EXPORT_WORKER,
        maxConcurrent: config.EXPORT_MAX_CONCURRENT,
        pollMs: config.EXPORT_POLL_MS,
        leaseMs: config.EXPORT_LEASE_MS,
        chunkRows: config.EXPORT_CHUNK_ROWS,
        rowsPerFile: config.EXPORT_ROWS_PER_FILE,
        retryDelayMs: config.EXPORT_RETRY_DELAY_MS,
      }),
    ],
    providers: [
      { provide: INTERNAL_SIGNING_KEY, useValue: config.INTERNAL_SIGNING_KEY },
      { provide: IDENTITY_RESOLVER, useClass: SignedHeaderIdentityResolver },
      { provide: APP_GUARD, useClass: AuthGuard },
    ],
  })
  class ExportWorkerAppModule {}
  const app = await createHttpApp(ExportWorkerAppModule, { service: 'export-worker', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES });
  return listen(app, config.HOST, config.PORT, () => db.destroy());
});
