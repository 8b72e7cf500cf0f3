import { randomBytes } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS } from '@th/audit';
import { InProcessBus, startBusConsumers } from '@th/bus';
import { ClickHouse, migrateClickHouse } from '@th/clickhouse';
import { TOPICS } from '@th/contracts';
import { CONTROL_PLANE_ENTITIES, CONTROL_PLANE_MIGRATIONS, CONTROL_PLANE_SCHEMA, controlPlaneOptionsFromConfig } from '@th/control-plane';
import { openServiceDataSource, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@th/database';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, IdentityService, generateApiKey } from '@th/gateway';
import { createMemoryRateLimiter, type RateLimiter } from '@th/gateway';
import { EXPORTS_ENTITIES, EXPORTS_MIGRATIONS, EXPORTS_SCHEMA } from '@th/export-worker';
import { createHttpApp, shutdownSelfTracing, traceHttpServer } from '@th/platform';
import { QUERY_ENTITIES, QUERY_MIGRATIONS } from '@th/query';
import { DATASETS_ENTITIES, DATASETS_MIGRATIONS, DATASETS_SCHEMA } from '@th/datasets';
import { PROMPT_HUB_ENTITIES, PROMPT_HUB_MIGRATIONS, PROMPT_HUB_SCHEMA } from '@th/prompt-hub';
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
  /** Where the SDK's links (http://localhost:3000) reach this service too; null when that port was taken or WEB_LINK_PORT is 0. */
  linkUrl: string | null;
  /** A link to the web app that signs in once, within SIGN_IN_LINK_TTL_MS, as the bootstrap key. */
  signInLink(): string;
  close(): Promise<void>;
}

/**
 * A secret the operator may set, else generated once and kept in DATA_DIR/<file> (0600), so what it
 * protects (sessions, encrypted values, the audit chain) survives a restart. `generated` tells the
 * start that created it.
 */
function persistedSecret(configured: string | undefined, dataDir: string, file: string, generate: () => string): { value: string; generated: boolean } {
  if (configured) return { value: configured, generated: false };
  const path = join(dataDir, file);
  if (existsSync(path)) {
    chmodSync(path, 0o600); // files written by versions that did not set the mode
    return { value: readFileSync(path, 'utf8').trim(), generated: false };
  }
  const value = generate();
  writeFileSync(path, value + '\n', { mode: 0o600 });
  return { value, generated: true };
}

/** How long the sign-in link `npm start` prints stays valid (it works once). */
export const SIGN_IN_LINK_TTL_MS = 30 * 60_000;

const randomSecret = () => randomBytes(32).toString('base64url');

/**
 * A second listener for the same app on the port the SDK's links name; a port in use is no error (the
 * service still runs on PORT, and says so).
 */
async function listenForSdkLinks(app: INestApplication, host: string, port: number): Promise<Server | null> {
  const server = createServer(app.getHttpAdapter().getInstance() as RequestListener);
  return new Promise((done) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'warn', service: 'standalone', msg: `the SDK's link port ${port} is not served: ${err.code ?? err.message}` }) + '\n');
      done(null);
    });
    server.listen(port, host, () => done(server));
  });
}

/** Every service's schema in one PostgreSQL database, migrated: the standalone form's data sources. */
export async function openStandaloneDatabases(dbUrl: string) {
  return {
    gatewayDb: await openServiceDataSource({ url: dbUrl, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS }),
    queryDb: await openServiceDataSource({ url: dbUrl, schema: 'query', entities: QUERY_ENTITIES, migrations: QUERY_MIGRATIONS }),
    datasetsDb: await openServiceDataSource({ url: dbUrl, schema: DATASETS_SCHEMA, entities: DATASETS_ENTITIES, migrations: DATASETS_MIGRATIONS, poolSize: 6 }),
    promptHubDb: await openServiceDataSource({ url: dbUrl, schema: PROMPT_HUB_SCHEMA, entities: PROMPT_HUB_ENTITIES, migrations: PROMPT_HUB_MIGRATIONS, poolSize: 4 }),
    auditDb: await openServiceDataSource({ url: dbUrl, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS, poolSize: 4 }),
    controlPlaneDb: await openServiceDataSource({ url: dbUrl, schema: CONTROL_PLANE_SCHEMA, entities: CONTROL_PLANE_ENTITIES, migrations: CONTROL_PLANE_MIGRATIONS, poolSize: 6 }),
    exportsDb: await openServiceDataSource({ url: dbUrl, schema: EXPORTS_SCHEMA, entities: EXPORTS_ENTITIES, migrations: EXPORTS_MIGRATIONS, poolSize: 4 }),
  };
}

/** Starts the whole service in this process: embedded PostgreSQL, chDB, the in-process bus. */
export async function startStandalone(config: StandaloneConfig): Promise<RunningStandalone> {
  const dataDir = resolve(config.DATA_DIR);
  // Owner only: it holds the generated secrets and the embedded databases (also when it existed before). As root,
  // others may traverse it (not list it): the embedded PostgreSQL and the deployment sandboxes run as other users.
  const dataDirMode = process.getuid?.() === 0 ? 0o711 : 0o700;
  mkdirSync(dataDir, { recursive: true, mode: dataDirMode });
  chmodSync(dataDir, dataDirMode);
  const apiKey = persistedSecret(config.BOOTSTRAP_API_KEY, dataDir, 'bootstrap-api-key', generateApiKey).value;
  const sessionSecret = persistedSecret(config.SESSION_SECRET, dataDir, 'session-secret', randomSecret).value;
  // Persisted, so values encrypted before a restart can still be decrypted after it.
  const controlPlaneSecretsKey = persistedSecret(config.CONTROL_PLANE_SECRETS_KEY, dataDir, 'control-plane-secrets-key', randomSecret).value;
  const exportEncryptionKey = persistedSecret(config.EXPORT_ENCRYPTION_KEY, dataDir, 'export-encryption-key', randomSecret).value;
  const promptWebhookSecretsKey = persistedSecret(config.PROMPT_WEBHOOK_SECRETS_KEY, dataDir, 'prompt-webhook-secrets-key', randomSecret).value;
  const workspaceSecretsKey = persistedSecret(config.WORKSPACE_SECRETS_KEY, dataDir, 'workspace-secrets-key', randomSecret).value;
  const auditChainKey = persistedSecret(config.AUDIT_CHAIN_KEY, dataDir, 'audit-chain-key', randomSecret);
  let pg: EmbeddedPostgresHandle | undefined;
  const dbUrl = config.DATABASE_URL ?? (pg = await startEmbeddedPostgres(join(dataDir, 'pg'))).url;
  const ch = ClickHouse.connect({ kind: 'embedded', path: join(dataDir, 'clickhouse') });
  await migrateClickHouse(ch);
  const { gatewayDb, queryDb, datasetsDb, promptHubDb, auditDb, controlPlaneDb, exportsDb } = await openStandaloneDatabases(dbUrl);
  const bus = new InProcessBus(config.INGEST_ACK === 'logged' ? { log: { dir: join(dataDir, 'bus'), topics: [TOPICS.runs] } } : {});
  const identityOptions = { sessionSecret, defaultCanUseAuditLogs: config.DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS };
  // One resolver for the limiter (which authenticates before counting) and the routes' guard.
  const identity = new IdentityService(gatewayDb, identityOptions);
  const rateLimit = createMemoryRateLimiter(config, identity);
  const app = await createHttpApp(
    StandaloneModule.create({
      bus,
      ch,
      gatewayDb,
      queryDb,
      datasetsDb,
      promptHub: { dataSource: promptHubDb, options: { secretsKey: promptWebhookSecretsKey, outboundAllowedHosts: config.OUTBOUND_ALLOWED_HOSTS } },
      auditDb,
      audit: {
        productVersion: config.SERVICE_VERSION,
        defaultOrgFeatureCanUseAuditLogs: config.DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS,
        retentionDays: config.AUDIT_RETENTION_DAYS,
        retentionIntervalMinutes: config.AUDIT_RETENTION_INTERVAL_MINUTES,
        chainKey: auditChainKey.value,
        // Chains stored before chain keys are converted in the start that creates the key, and never again.
        rekeyUnkeyedChains: auditChainKey.generated,
      },
      info: {
        version: config.SERVICE_VERSION,
        maxBodyBytes: config.MAX_BODY_BYTES,
        batchSizeLimit: config.INGEST_BATCH_SIZE_LIMIT,
        // The audit and export-worker modules run in this process; /info gates them by SERVICE_VERSION.
        offered: { audit_logs: true, scheduled_exports: true, export_fields: true },
      },
      gateway: {
        identity: identityOptions,
        identityService: identity,
        workspaceSecretsKey,
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
      },
      controlPlane: {
        dataSource: controlPlaneDb,
        options: controlPlaneOptionsFromConfig(config, {
          databaseUrl: dbUrl,
          dataDir,
          secretsKey: controlPlaneSecretsKey,
          host: config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST,
          env: process.env,
        }),
      },
      exports: {
        dataSource: exportsDb,
        encryptionKey: exportEncryptionKey,
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
    { service: 'standalone', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config, beforeBody: [rateLimit.middleware], webDir: config.WEB_DIR },
  );
  const seeded = await identity.bootstrap(apiKey);
  await startBusConsumers(app);
  traceHttpServer(app.getHttpServer());
  await app.listen(config.PORT, config.HOST);
  const addr = app.getHttpServer().address() as { port: number };
  const url = `http://${config.HOST === '0.0.0.0' ? '127.0.0.1' : config.HOST}:${addr.port}`;
  const linkServer = config.WEB_LINK_PORT && config.WEB_LINK_PORT !== addr.port ? await listenForSdkLinks(app, config.HOST, config.WEB_LINK_PORT) : null;
  let closed = false;
  return {
    app,
    url,
    apiKey,
    organizationId: seeded.organization_id,
    workspaceId: seeded.workspace_id,
    ch,
    rateLimiter: rateLimit.limiter,
    // The token is in the fragment: browsers do not send it, so it reaches no access log or proxy.
    linkUrl: linkServer ? `http://localhost:${config.WEB_LINK_PORT}` : null,
    // On the SDK's link address when it is served: the cookie is then set for the host its links name.
    signInLink: () => `${linkServer ? `http://localhost:${config.WEB_LINK_PORT}` : url}/login#token=${identity.issueSignInToken(apiKey, SIGN_IN_LINK_TTL_MS)}`,
    async close() {
      if (closed) return;
      closed = true;
      if (linkServer) {
        linkServer.closeAllConnections();
        await new Promise((done) => linkServer.close(done));
      }
      await app.close(); // stops HTTP intake, drains the bus, closes ClickHouse
      await rateLimit.close();
      await gatewayDb.destroy();
      await queryDb.destroy();
      await datasetsDb.destroy();
      await promptHubDb.destroy();
      await controlPlaneDb.destroy();
      await auditDb.destroy();
      await exportsDb.destroy();
      if (pg) await pg.stop();
      await shutdownSelfTracing();
    },
  };
}
