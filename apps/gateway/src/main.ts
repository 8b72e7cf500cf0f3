import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AuthGuard, IDENTITY_RESOLVER } from '@th/auth';
import { AuditClientModule } from '@th/audit-client';
import { BusModule, EventBus, kafkaOptionsFromConfig, startBusConsumers } from '@th/bus';
import { loadConfig } from '@th/config';
import { openServiceDataSource } from '@th/database';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, GatewayModule, IdentityService, createRedisRateLimiter, gatewayProxy, serveProxiedRoutesFirst } from '@th/gateway';
import { HealthModule, createHttpApp, listen, runUntilSignal } from '@th/platform';
import { gatewayConfigSchema } from './config';

runUntilSignal('gateway', async () => {
  const config = loadConfig(gatewayConfigSchema, process.env);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
  // One resolver for the proxy (which runs before Nest routes) and the admin endpoints.
  const identity = new IdentityService(db, { sessionSecret: config.SESSION_SECRET, defaultCanUseAuditLogs: config.DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS });
  const gateway = GatewayModule.forRoot(
    db,
    {
      version: config.SERVICE_VERSION,
      maxBodyBytes: config.MAX_BODY_BYTES,
      batchSizeLimit: config.INGEST_BATCH_SIZE_LIMIT,
      offered: { audit_logs: !!config.AUDIT_URL, scheduled_exports: !!config.EXPORT_WORKER_URL, export_fields: !!config.EXPORT_WORKER_URL },
    },
    {
      identityService: identity,
      sessionTtlSeconds: config.SESSION_TTL_SECONDS,
      identity: { sessionSecret: config.SESSION_SECRET },
      // Domain-separated from the signing key when not set of its own (as the control plane's secrets key).
      workspaceSecretsKey: config.WORKSPACE_SECRETS_KEY ?? createHash('sha256').update(`workspace-secrets:${config.INTERNAL_SIGNING_KEY}`).digest('base64url'),
    },
  );
  @Module({
    imports: [HealthModule, BusModule.forRoot({ kafka: kafkaOptionsFromConfig(config, 'gateway'), service: 'gateway' }), AuditClientModule.forRoot({ service: 'gateway' }), gateway],
    providers: [
      { provide: IDENTITY_RESOLVER, useExisting: IdentityService },
      { provide: APP_GUARD, useClass: AuthGuard },
    ],
  })
  class GatewayAppModule {}
  // Counters in Redis, shared by every replica; each request is counted as its verified credential.
  const rateLimit = await createRedisRateLimiter(config, identity);
  const upstreams = {
    ingest: config.INGEST_URL,
    query: config.QUERY_URL,
    exportWorker: config.EXPORT_WORKER_URL,
    audit: config.AUDIT_URL,
    controlPlane: config.CONTROL_PLANE_URL,
  };
  const proxy = gatewayProxy({ upstreams, resolver: identity, signingKey: config.INTERNAL_SIGNING_KEY, maxBodyBytes: config.MAX_BODY_BYTES });
  // The gateway's own routes (admin, /info, /ok) go through Express, rate-limited by the same limiter.
  const app = await createHttpApp(GatewayAppModule, { service: 'gateway', logLevel: config.LOG_LEVEL, maxBodyBytes: config.MAX_BODY_BYTES, metrics: config, tracing: config, beforeBody: [rateLimit.middleware], webDir: config.WEB_DIR });
  // The proxied routes skip Express and Nest: rate limit, authenticate, sign, stream (the hot path).
  serveProxiedRoutesFirst(app.getHttpServer(), { upstreams, limiter: rateLimit.limiter, proxy });
  await app.get(EventBus).healthy(); // joins the bus: topics exist, producer connected
  if (config.BOOTSTRAP_API_KEY) await identity.bootstrap(config.BOOTSTRAP_API_KEY);
  await startBusConsumers(app);
  return listen(app, config.HOST, config.PORT, () => rateLimit.close().then(() => db.destroy()));
});
