import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { signedIdentityProviders } from '@th/auth';
import { AuditClientModule } from '@th/audit-client';
import { BusModule, kafkaOptionsFromConfig, startBusConsumers } from '@th/bus';
import { ClickHouse, ClickHouseModule } from '@th/clickhouse';
import { loadConfig } from '@th/config';
import { FeedbackModule } from '@th/feedback';
import { CachedProjectDirectory, HttpProjectDirectory, IngestModule, ProjectDirectory } from '@th/ingest';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import { ingestConfigSchema } from './config';

runUntilSignal('ingest', async () => {
  const config = loadConfig(ingestConfigSchema, process.env);
  const ch = await ClickHouse.fromConfig(config);
  @Global()
  @Module({
    providers: [
      {
        provide: ProjectDirectory,
        useValue: new CachedProjectDirectory(new HttpProjectDirectory(config.QUERY_URL, config.INTERNAL_SIGNING_KEY), 10_000),
      },
    ],
    exports: [ProjectDirectory],
  })
  class WiringModule {}
  @Module({
    imports: [
      HealthModule,
      BusModule.forRoot({
        service: 'ingest',
        kafka: kafkaOptionsFromConfig(config, 'ingest'),
      }),
      AuditClientModule.forRoot({ service: 'ingest' }),
      ClickHouseModule.forRoot(ch),
      WiringModule,
      IngestModule.forRoot({
        writer: config.INGEST_WRITER,
        writerMaxBatch: config.WRITER_MAX_BATCH,
        writerCacheEntries: config.WRITER_CACHE_ENTRIES,
        writerLingerMs: config.WRITER_LINGER_MS,
        maxBodyBytes: config.MAX_BODY_BYTES,
        batchSizeLimit: config.INGEST_BATCH_SIZE_LIMIT,
      }),
      FeedbackModule.forRoot({ writes: true, reads: false, writer: config.INGEST_WRITER }),
    ],
    providers: [
      ...signedIdentityProviders(config.INTERNAL_SIGNING_KEY),
    ],
  })
  class IngestAppModule {}
  const app = await createHttpApp(IngestAppModule, { service: 'ingest', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config });
  await startBusConsumers(app);
  return listen(app, config.HOST, config.PORT);
});
