import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { runQuerySchema, type Identity, type ProjectResolveRequest, type ProjectResolveResponse } from '@th/contracts';
import { AuthGuard, IDENTITY_RESOLVER } from '@th/auth';
import { AuditModule, type AuditOptions } from '@th/audit';
import { BusModule, type EventBus } from '@th/bus';
import { ClickHouseModule, type ClickHouse } from '@th/clickhouse';
import { ExportRunFilter, ExportWorkerModule, type ExportWorkerModuleOptions } from '@th/export-worker';
import { ControlPlaneModule, type ControlPlaneOptions } from '@th/control-plane';
import { FeedbackModule, FeedbackQueryService } from '@th/feedback';
import { DatasetsModule, ExperimentsModule } from '@th/datasets';
import { GatewayModule, IdentityService, type GatewayInfoOptions, type GatewayModuleOptions } from '@th/gateway';
import { CachedProjectDirectory, IngestModule, ProjectDirectory, type IngestOptions } from '@th/ingest';
import { HealthModule } from '@th/platform';
import { ProjectsService, QueryModule, RunsService } from '@th/query';

/** In one process, ingest asks the query module directly instead of over HTTP. */
class LocalProjectDirectory extends ProjectDirectory {
  constructor(private readonly projects: ProjectsService) {
    super();
  }
  resolve(identity: Identity, req: ProjectResolveRequest): Promise<ProjectResolveResponse> {
    return this.projects.resolve(identity, req);
  }
}

/** In one process, the export worker evaluates export filters with the query module's run query. */
class LocalExportRunFilter extends ExportRunFilter {
  constructor(private readonly runs: RunsService) {
    super();
  }
  async validate(identity: Identity, sessionId: string, filter: string): Promise<void> {
    await this.runs.query(identity, runQuerySchema.parse({ session: [sessionId], filter, select: ['id'], limit: 1, order: 'asc' }));
  }
  async matching(identity: Identity, sessionId: string, ids: string[], filter: string): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < ids.length; i += 1000) {
      let cursor: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const q = runQuerySchema.parse({ session: [sessionId], id: ids.slice(i, i + 1000), filter, select: ['id'], limit: 1000, order: 'asc', cursor });
        const res = await this.runs.query(identity, q);
        for (const r of res.runs) if (typeof r.id === 'string') out.add(r.id);
        cursor = res.cursors.next;
        if (!cursor) break;
      }
    }
    return out;
  }
}

export interface StandaloneParts {
  bus: EventBus;
  ch: ClickHouse;
  gatewayDb: DataSource;
  queryDb: DataSource;
  /** The datasets module's own schema (`datasets`); absent → no datasets routes. */
  datasetsDb?: DataSource;
  auditDb: DataSource;
  audit: AuditOptions;
  info: GatewayInfoOptions;
  gateway?: GatewayModuleOptions;
  ingest: IngestOptions;
  exports?: ExportWorkerModuleOptions;
  controlPlane?: { dataSource: DataSource; options: ControlPlaneOptions };
}

/** Every service module in one Nest app: the gateway authenticates in process, no HTTP hop. */
@Module({})
export class StandaloneModule {
  static create(parts: StandaloneParts): DynamicModule {
    const query = QueryModule.forRoot(parts.queryDb);
    const feedback = FeedbackModule.forRoot({ writes: true, reads: true, writer: true });
    const datasets = parts.datasetsDb ? DatasetsModule.forRoot(parts.datasetsDb) : null;
    @Global()
    @Module({
      imports: [query],
      providers: [
        {
          provide: ProjectDirectory,
          inject: [ProjectsService],
          useFactory: (p: ProjectsService) => new CachedProjectDirectory(new LocalProjectDirectory(p), 10_000),
        },
        { provide: ExportRunFilter, inject: [RunsService], useFactory: (r: RunsService) => new LocalExportRunFilter(r) },
      ],
      exports: [ProjectDirectory, ExportRunFilter],
    })
    class WiringModule {}

    return {
      module: StandaloneModule,
      imports: [
        HealthModule,
        BusModule.forRoot({ instance: parts.bus }),
        ClickHouseModule.forRoot(parts.ch),
        GatewayModule.forRoot(parts.gatewayDb, parts.info, parts.gateway),
        WiringModule,
        IngestModule.forRoot(parts.ingest),
        ...(parts.exports ? [ExportWorkerModule.forRoot(parts.exports)] : []),
        ...(parts.controlPlane ? [ControlPlaneModule.forRoot(parts.controlPlane.dataSource, parts.controlPlane.options)] : []),
        AuditModule.forRoot(parts.auditDb, parts.audit),
        feedback,
        ...(datasets
          ? [datasets, ExperimentsModule.forRoot({ imports: [datasets, query, feedback], projects: ProjectsService, runs: RunsService, feedback: FeedbackQueryService })]
          : []),
      ],
      providers: [
        { provide: IDENTITY_RESOLVER, useExisting: IdentityService },
        { provide: APP_GUARD, useClass: AuthGuard },
      ],
    };
  }
}
