import { DynamicModule, Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { DataSource } from 'typeorm';
import { type Identity, type ProjectResolveRequest, type ProjectResolveResponse } from '@th/contracts';
import { AuthGuard, IDENTITY_RESOLVER } from '@th/auth';
import { AuditModule, type AuditOptions } from '@th/audit';
import { AuditClientModule } from '@th/audit-client';
import { BusModule, type EventBus } from '@th/bus';
import { ClickHouseModule, type ClickHouse } from '@th/clickhouse';
import { ExportWorkerModule, type ExportWorkerModuleOptions } from '@th/export-worker';
import { ControlPlaneModule, type ControlPlaneOptions } from '@th/control-plane';
import { FeedbackModule, FeedbackQueryService } from '@th/feedback';
import { DatasetsModule, ExperimentsModule } from '@th/datasets';
import { GatewayModule, IdentityService, type GatewayInfoOptions, type GatewayModuleOptions } from '@th/gateway';
import { CachedProjectDirectory, IngestModule, ProjectDirectory, type IngestOptions } from '@th/ingest';
import { HealthModule } from '@th/platform';
import { PromptHubModule, type PromptHubOptions } from '@th/prompt-hub';
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

export interface StandaloneParts {
  bus: EventBus;
  ch: ClickHouse;
  gatewayDb: DataSource;
  queryDb: DataSource;
  /** The datasets module's own schema (`datasets`); absent → no datasets routes. */
  datasetsDb?: DataSource;
  /** The prompt hub's own schema (`prompt_hub`); absent → no hub routes. */
  promptHub?: { dataSource: DataSource; options: PromptHubOptions };
  auditDb: DataSource;
  audit: AuditOptions;
  info: GatewayInfoOptions;
  gateway: GatewayModuleOptions;
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
      ],
      exports: [ProjectDirectory],
    })
    class WiringModule {}

    return {
      module: StandaloneModule,
      imports: [
        HealthModule,
        BusModule.forRoot({ instance: parts.bus }),
        AuditClientModule.forRoot({ service: 'standalone' }),
        ClickHouseModule.forRoot(parts.ch),
        GatewayModule.forRoot(parts.gatewayDb, parts.info, parts.gateway),
        WiringModule,
        IngestModule.forRoot(parts.ingest),
        ...(parts.exports ? [ExportWorkerModule.forRoot(parts.exports)] : []),
        ...(parts.controlPlane ? [ControlPlaneModule.forRoot(parts.controlPlane.dataSource, parts.controlPlane.options)] : []),
        AuditModule.forRoot(parts.auditDb, parts.audit),
        feedback,
        ...(parts.promptHub ? [PromptHubModule.forRoot(parts.promptHub.dataSource, parts.promptHub.options)] : []),
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
