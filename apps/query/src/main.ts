import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { signedIdentityProviders } from '@th/auth';
import { AuditClientModule } from '@th/audit-client';
import { BusModule, kafkaOptionsFromConfig, startBusConsumers } from '@th/bus';
import { ClickHouse, ClickHouseModule } from '@th/clickhouse';
import { loadConfig } from '@th/config';
import { PostgresHealthModule, openServiceDataSource } from '@th/database';
import { FeedbackModule, FeedbackQueryService } from '@th/feedback';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import { ProjectsService, QUERY_ENTITIES, QUERY_MIGRATIONS, QueryModule, RunsService } from '@th/query';
import { DATASETS_ENTITIES, DATASETS_MIGRATIONS, DATASETS_SCHEMA, DatasetsModule, ExperimentsModule } from '@th/datasets';
import { PROMPT_HUB_ENTITIES, PROMPT_HUB_MIGRATIONS, PROMPT_HUB_SCHEMA, PromptHubModule } from '@th/prompt-hub';
import { queryConfigSchema } from './config';

runUntilSignal('query', async () => {
  const config = loadConfig(queryConfigSchema, process.env);
  const ch = await ClickHouse.fromConfig(config);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: 'query', entities: QUERY_ENTITIES, migrations: QUERY_MIGRATIONS });
  const datasetsDb = await openServiceDataSource({ url: config.DATABASE_URL, schema: DATASETS_SCHEMA, entities: DATASETS_ENTITIES, migrations: DATASETS_MIGRATIONS });
  const promptHubDb = await openServiceDataSource({ url: config.DATABASE_URL, schema: PROMPT_HUB_SCHEMA, entities: PROMPT_HUB_ENTITIES, migrations: PROMPT_HUB_MIGRATIONS, poolSize: 4 });
  const query = QueryModule.forRoot(db);
  const datasets = DatasetsModule.forRoot(datasetsDb);
  const feedback = FeedbackModule.forRoot({ writes: false, reads: true, writer: false });
  @Module({
    imports: [
      HealthModule,
      PostgresHealthModule.forRoot(db),
      BusModule.forRoot({
        service: 'query',
        kafka: kafkaOptionsFromConfig(config, 'query'),
      }),
      AuditClientModule.forRoot({ service: 'query' }),
      ClickHouseModule.forRoot(ch),
      query,
      datasets,
      feedback,
      PromptHubModule.forRoot(promptHubDb, { secretsKey: config.PROMPT_WEBHOOK_SECRETS_KEY, outboundAllowedHosts: config.OUTBOUND_ALLOWED_HOSTS }),
      ExperimentsModule.forRoot({ imports: [datasets, query, feedback], projects: ProjectsService, runs: RunsService, feedback: FeedbackQueryService }),
    ],
    providers: [
      ...signedIdentityProviders(config.INTERNAL_SIGNING_KEY),
    ],
  })
  class QueryAppModule {}
  const app = await createHttpApp(QueryAppModule, { service: 'query', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config });
  await startBusConsumers(app);
  return listen(app, config.HOST, config.PORT, () => Promise.all([db.destroy(), datasetsDb.destroy(), promptHubDb.destroy()]));
});
