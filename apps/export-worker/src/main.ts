import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { signedIdentityProviders } from '@th/auth';
import { AuditClientModule } from '@th/audit-client';
import { BusModule, kafkaOptionsFromConfig, startBusConsumers } from '@th/bus';
import { ClickHouse, ClickHouseModule } from '@th/clickhouse';
import { loadConfig } from '@th/config';
import { PostgresHealthModule, openServiceDataSource } from '@th/database';
import { EXPORTS_ENTITIES, EXPORTS_MIGRATIONS, EXPORTS_SCHEMA, ExportWorkerModule } from '@th/export-worker';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import { exportWorkerConfigSchema } from './config';

runUntilSignal('export-worker', async () => {
  const config = loadConfig(exportWorkerConfigSchema, process.env);
  const ch = await ClickHouse.fromConfig(config);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: EXPORTS_SCHEMA, entities: EXPORTS_ENTITIES, migrations: EXPORTS_MIGRATIONS });
  @Module({
    imports: [
      HealthModule,
      PostgresHealthModule.forRoot(db),
      BusModule.forRoot({ service: 'export-worker', kafka: kafkaOptionsFromConfig(config, 'export-worker') }),
      AuditClientModule.forRoot({ service: 'export-worker' }),
      ClickHouseModule.forRoot(ch),
      ExportWorkerModule.forRoot({
        dataSource: db,
        encryptionKey: config.EXPORT_ENCRYPTION_KEY,
        worker: config.EXPORT_WORKER,
        maxConcurrent: config.EXPORT_MAX_CONCURRENT,
        pollMs: config.EXPORT_POLL_MS,
        leaseMs: config.EXPORT_LEASE_MS,
        rowsPerFile: config.EXPORT_ROWS_PER_FILE,
        retryDelayMs: config.EXPORT_RETRY_DELAY_MS,
        outboundAllowedHosts: config.OUTBOUND_ALLOWED_HOSTS,
      }),
    ],
    providers: [
      ...signedIdentityProviders(config.INTERNAL_SIGNING_KEY),
    ],
  })
  class ExportWorkerAppModule {}
  const app = await createHttpApp(ExportWorkerAppModule, { service: 'export-worker', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config });
  await startBusConsumers(app);
  return listen(app, config.HOST, config.PORT, () => db.destroy());
});
