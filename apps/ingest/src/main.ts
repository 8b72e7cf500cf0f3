import 'reflect-metadata';
import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { z } from 'zod';
import { AuthGuard, IDENTITY_RESOLVER, INTERNAL_SIGNING_KEY, SignedHeaderIdentityResolver } from '@th/auth';
import { BusModule, kafkaOptionsFromConfig } from '@th/bus';
import { ClickHouse, ClickHouseModule } from '@th/clickhouse';
import { bool, clickhouseConfigShape, commonConfigShape, internalAuthShape, kafkaConfigShape, loadConfig, port } from '@th/config';
import { FeedbackModule } from '@th/feedback';
import { CachedProjectDirectory, HttpProjectDirectory, IngestModule, ProjectDirectory } from '@th/ingest';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';

const configSchema = z.object({
  ...commonConfigShape,
  ...internalAuthShape,
  ...kafkaConfigShape,
  ...clickhouseConfigShape,
  PORT: port(8081),
  HOST: z.string().default('0.0.0.0'),
  QUERY_URL: z.string().url(),
  INGEST_WRITER: bool(true),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
  INGEST_BATCH_SIZE_LIMIT: z.coerce.number().int().min(1).default(100),
  WRITER_MAX_BATCH: z.coerce.number().int().min(1).default(20_000),
  WRITER_CACHE_ENTRIES: z.coerce.number().int().min(0).default(100_000),
  /** Milliseconds rows that came in during an insert may gather before the next insert starts (0: at once). */
  WRITER_LINGER_MS: z.coerce.number().int().min(0).max(1_000).default(20),
});

runUntilSignal('ingest', async () => {
  const config = loadConfig(configSchema, process.env);
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
      { provide: INTERNAL_SIGNING_KEY, useValue: config.INTERNAL_SIGNING_KEY },
      { provide: IDENTITY_RESOLVER, useClass: SignedHeaderIdentityResolver },
      { provide: APP_GUARD, useClass: AuthGuard },
    ],
  })
  class IngestAppModule {}
  const app = await createHttpApp(IngestAppModule, { service: 'ingest', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES });
  return listen(app, config.HOST, config.PORT);
});
