import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS, AuditModule } from '@th/audit';
import { signedIdentityProviders } from '@th/auth';
import { AuditClientModule } from '@th/audit-client';
import { BusModule, EventBus, kafkaOptionsFromConfig, startBusConsumers } from '@th/bus';
import { loadConfig } from '@th/config';
import { PostgresHealthModule, openServiceDataSource } from '@th/database';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import { auditConfigSchema } from './config';

runUntilSignal('audit', async () => {
  const config = loadConfig(auditConfigSchema, process.env);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS });
  @Module({
    imports: [
      HealthModule,
      PostgresHealthModule.forRoot(db),
      BusModule.forRoot({ service: 'audit', kafka: kafkaOptionsFromConfig(config, 'audit') }),
      AuditClientModule.forRoot({ service: 'audit' }),
      AuditModule.forRoot(db, {
        productVersion: config.SERVICE_VERSION,
        defaultOrgFeatureCanUseAuditLogs: config.DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS,
        retentionDays: config.AUDIT_RETENTION_DAYS,
        retentionIntervalMinutes: config.AUDIT_RETENTION_INTERVAL_MINUTES,
        chainKey: config.AUDIT_CHAIN_KEY,
      }),
    ],
    providers: [
      ...signedIdentityProviders(config.INTERNAL_SIGNING_KEY),
    ],
  })
  class AuditAppModule {}
  const app = await createHttpApp(AuditAppModule, { service: 'audit', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config });
  await app.get(EventBus).healthy(); // joins the bus: topics exist
  await startBusConsumers(app);
  return listen(app, config.HOST, config.PORT, () => db.destroy());
});
