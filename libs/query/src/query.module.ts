import { DynamicModule, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ProjectsController, InternalProjectsController } from './projects/projects.controller';
import { ProjectsRepository } from './projects/projects.repository';
import { ProjectsService } from './projects/projects.service';
import { MonitoringRepository } from './projects/monitoring.repository';
import { MonitoringService } from './projects/monitoring.service';
import { SavedFiltersRepository } from './projects/saved-filters.repository';
import { SavedFiltersService } from './projects/saved-filters.service';
import { DeploymentProjectsConsumer } from './projects/deployment-projects.consumer';
import { RunAttachmentsController, RunsController } from './runs/runs.controller';
import { RunAttachmentSigner } from './runs/attachment-urls';
import { RunsRepository } from './runs/runs.repository';
import { RunsService } from './runs/runs.service';
import { FeedbackStatsRepository } from './runs/feedback-stats.repository';
import { PublicRunsController, V2PublicRunsController } from './v2/public-runs.controller';
import { RunSharesController } from './v2/run-shares.controller';
import { SharesRepository } from './v2/shares.repository';
import { SharesService } from './v2/shares.service';
import { ThreadsRepository } from './v2/threads.repository';
import { V2RunsController } from './v2/v2-runs.controller';
import { V2RunsService } from './v2/v2-runs.service';
import { V2SessionsController } from './v2/v2-sessions.controller';
import { V2ThreadsController } from './v2/v2-threads.controller';
import { V2ThreadsService } from './v2/v2-threads.service';
import { V2TracesController } from './v2/v2-traces.controller';

export const QUERY_DATA_SOURCE = Symbol('QUERY_DATA_SOURCE');

/** Tracing reads and tracing metadata. Needs ClickHouse and EventBus from the host, and its own DataSource. */
@Module({})
export class QueryModule {
  static forRoot(dataSource: DataSource): DynamicModule {
    return {
      module: QueryModule,
      controllers: [
        RunSharesController,
        RunsController,
        RunAttachmentsController,
        ProjectsController,
        InternalProjectsController,
        // The SDKs' generated (v2) client and public shares.
        V2RunsController,
        V2TracesController,
        V2ThreadsController,
        V2SessionsController,
        V2PublicRunsController,
        PublicRunsController,
        DeploymentProjectsConsumer,
      ],
      providers: [
        { provide: QUERY_DATA_SOURCE, useValue: dataSource },
        { provide: ProjectsRepository, useFactory: () => new ProjectsRepository(dataSource) },
        { provide: RunAttachmentSigner, useFactory: () => new RunAttachmentSigner(dataSource) },
        RunsRepository,
        FeedbackStatsRepository,
        RunsService,
        ProjectsService,
        MonitoringRepository,
        MonitoringService,
        { provide: SavedFiltersRepository, useFactory: () => new SavedFiltersRepository(dataSource) },
        SavedFiltersService,
        { provide: SharesRepository, useFactory: () => new SharesRepository(dataSource) },
        ThreadsRepository,
        V2RunsService,
        V2ThreadsService,
        SharesService,
      ],
      exports: [ProjectsService, RunsService],
    };
  }
}
