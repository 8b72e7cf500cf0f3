import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS } from '@th/audit';
import { InProcessBus } from '@th/bus';
import { ClickHouse, migrateClickHouse } from '@th/clickhouse';
import { TOPICS } from '@th/contracts';
import { CONTROL_PLANE_ENTITIES, CONTROL_PLANE_MIGRATIONS, CONTROL_PLANE_SCHEMA, controlPlaneOptionsFromConfig } from '@th/control-plane';
import { openServiceDataSource, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@th/database';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, IdentityService, generateApiKey } from '@th/gateway';
import { createMemoryRateLimiter, type RateLimiter } from '@th/gateway';
import { EXPORTS_ENTITIES, EXPORTS_MIGRATIONS, EXPORTS_SCHEMA } from '@th/export-worker';
import { createHttpApp } from '@th/platform';
import { QUERY_ENTITIES, QUERY_MIGRATIONS } from '@th/query';
import { DATASETS_ENTITIES, DATASETS_MIGRATIONS, DATASETS_SCHEMA } from '@th/datasets';
import type { StandaloneConfig } from './config';
import { StandaloneModule } from './standalone.module';

export interface RunningStandalone {
  app: INestApplication;
  url: string;
  apiKey: string;
  organizationId: string;
  workspaceId: string;
  ch: ClickHouse;
  /** The rate limiter in front of every route (null when RATE_LIMIT_ENABLED is false). */
  rateLimiter: RateLimiter | null;
  close(): Promise<void>;
}

function bootstrapKey(config: StandaloneConfig, dataDir: string): string {
  if (config.BOOTSTRAP_API_KEY) return config.BOOTSTRAP_API_KEY;
  const file = join(dataDir, 'bootstrap-api-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const key = generateApiKey();
  writeFileSync(file, key + '\n', { mode: 0o600 });
  return key;
}

function sessionSecret(config: StandaloneConfig, dataDir: string): string {
  if (config.SESSION_SECRET) return config.SESSION_SECRET;
  const file = join(dataDir, 'session-secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, value + '\n', { mode: 0o600 });
  return value;
}

function controlPlaneSecretsKey(config: StandaloneConfig, dataDir: string): string {
  if (config.CONTROL_PLANE_SECRETS_KEY) return config.CONTROL_PLANE_SECRETS_KEY;
  // Persisted, so deployment secrets stored before a restart can still be decrypted after it.
  const file = join(dataDir, 'control-plane-secrets-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, value + '\n', { mode: 0o600 });
  return value;
}

function exportEncryptionKey(config: StandaloneConfig, dataDir: string): string {
  if (config.EXPORT_ENCRYPTION_KEY) return config.EXPORT_ENCRYPTION_KEY;
  // Persisted, so destinations saved before a restart can still be decrypted after it.
  const file = join(dataDir, 'export-encryption-key');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const value = randomBytes(32).toString('base64url');
  writeFileSync(file, value + '\n', { mode: 0o600 });
  return value;
}

/** Starts the whole service in this process: embedded PostgreSQL, chDB, the in-process bus. */
export async function startStandalone(config: StandaloneConfig): Promise<RunningStandalone> {
  const dataDir = resolve(config.DATA_DIR);
  mkdirSync(dataDir, { recursive: true });
  let pg: EmbeddedPostgresHandle | undefined;
  const dbUrl = config.DATABASE_URL ?? (pg = await startEmbeddedPostgres(join(dataDir, 'pg'))).url;
  const ch = ClickHouse.connect({ kind: 'embedded', path: join(dataDir, 'clickhouse') });
  await migrateClickHouse(ch);
  const gatewayDb = await openServiceDataSource({ url: dbUrl, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
  const queryDb = await openServiceDataSource({ url: dbUrl, schema: 'query', entities: QUERY_ENTITIES, migrations: QUERY_MIGRATIONS });
  const datasetsDb = await openServiceDataSource({ url: dbUrl, schema: DATASETS_SCHEMA, entities: DATASETS_ENTITIES, migrations: DATASETS_MIGRATIONS, poolSize: 6 });
  const auditDb = await openServiceDataSource({ url: dbUrl, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS, poolSize: 4 });
  const controlPlaneDb = await openServiceDataSource({ url: dbUrl, schema: CONTROL_PLANE_SCHEMA, entities: CONTROL_PLANE_ENTITIES, migrations: CONTROL_PLANE_MIGRATIONS, poolSize: 6 });
  const exportsDb = await openServiceDataSource({ url: dbUrl, schema: EXPORTS_SCHEMA, entities: EXPORTS_ENTITIES, migrations: EXPORTS_MIGRATIONS, poolSize: 4 });
  const bus = new InProcessBus(config.INGEST_ACK === 'logged' ? { log: { dir: join(dataDir, 'bus'), topics: [TOPICS.runs] } } : {});
  const rateLimit = createMemoryRateLimiter(config);
  const app = await createHttpApp(
    StandaloneModule.create({
      bus,
      ch,
      gatewayDb,
      queryDb,
      datasetsDb,
      auditDb,
      audit: {
        productVersion: config.SERVICE_VERSION,
        defaultOrgFeatureCanUseAuditLogs: config.DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS,
        retentionDays: config.AUDIT_RETENTION_DAYS,
        retentionIntervalMinutes: config.AUDIT_RETENTION_INTERVAL_MINUTES,
      },
      info: {
        version: config.SERVICE_VERSION,
        maxBodyBytes: config.MAX_BODY_BYTES,
        batchSizeLimit: config.INGEST_BATCH_SIZE_LIMIT,
        // The audit and export-worker modules run in this process; /info gates them by SERVICE_VERSION.
        offered: { audit_logs: true, scheduled_exports: true, export_fields: true },
      },
      gateway: {
        identity: { sessionSecret: sessionSecret(config, dataDir), defaultCanUseAuditLogs: config.DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS },
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
      },
      controlPlane: {
        dataSource: controlPlaneDb,
        options: controlPlaneOptionsFromConfig(config, {
          databaseUrl: dbUrl,
          dataDir,
          secretsKey: controlPlaneSecretsKey(config, dataDir),
          host: config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST,
          env: process.env,
        }),
      },
      exports: {
        dataSource: exportsDb,
        encryptionKey: exportEncryptionKey(config, dataDir),
        maxConcurrent: config.EXPORT_MAX_CONCURRENT,
        pollMs: config.EXPORT_POLL_MS,
        retryDelayMs: config.EXPORT_RETRY_DELAY_MS,
        outboundAllowedHosts: config.OUTBOUND_ALLOWED_HOSTS,
      },
      ingest: {
        writer: true,
        writerMaxBatch: config.WRITER_MAX_BATCH,
        writerCacheEntries: config.WRITER_CACHE_ENTRIES,
        writerLingerMs: config.WRITER_LINGER_MS,
        // The embedded engine's directory belongs to this process: no other writer.
        soleWriter: true,
        writerParallelBacklog: config.WRITER_PARALLEL_BACKLOG ?? (config.INGEST_ACK === 'logged' ? 6_000 : 2_000),
        maxBodyBytes: config.MAX_BODY_BYTES,
        batchSizeLimit: config.INGEST_BATCH_SIZE_LIMIT,
      },
    }),
    { service: 'standalone', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, beforeBody: [rateLimit.middleware] },
  );
  const apiKey = bootstrapKey(config, dataDir);
  const seeded = await app.get(IdentityService).bootstrap(apiKey);
  await app.listen(config.PORT, config.HOST);
  const addr = app.getHttpServer().address() as { port: number };
  const url = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${addr.port}`;
  let closed = false;
  return {
    app,
    url,
    apiKey,
    organizationId: seeded.organization_id,
    workspaceId: seeded.workspace_id,
    ch,
    rateLimiter: rateLimit.limiter,
    async close() {
      if (closed) return;
      closed = true;
      await app.close(); // stops HTTP intake, drains the bus, closes ClickHouse
      await rateLimit.close();
      await gatewayDb.destroy();
      await queryDb.destroy();
      await datasetsDb.destroy();
      await controlPlaneDb.destroy();
      await auditDb.destroy();
      await exportsDb.destroy();
      if (pg) await pg.stop();
    },
  };
}
