import { DynamicModule, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ProjectsController, InternalProjectsController } from './projects/projects.controller';
import { ProjectsRepository } from './projects/projects.repository';
import { ProjectsService } from './projects/projects.service';
import { DeploymentProjectsConsumer } from './projects/deployment-projects.consumer';
import { RunAttachmentsController, RunsController } from './runs/runs.controller';
import { RunAttachmentSigner } from './runs/attachment-urls';
import { RunsRepository } from './runs/runs.repository';
import { RunsService } from './runs/runs.service';
import { FeedbackStatsRepository } from './runs/feedback-stats.repository';

export const QUERY_DATA_SOURCE = Symbol('QUERY_DATA_SOURCE');

/** Tracing reads and tracing metadata. Needs ClickHouse and EventBus from the host, and its own DataSource. */
@Module({})
export class QueryModule {
  static forRoot(dataSource: DataSource): DynamicModule {
    return {
      module: QueryModule,
      controllers: [RunsController, RunAttachmentsController, ProjectsController, InternalProjectsController, DeploymentProjectsConsumer],
      providers: [
        { provide: QUERY_DATA_SOURCE, useValue: dataSource },
        { provide: ProjectsRepository, useFactory: () => new ProjectsRepository(dataSource) },
        { provide: RunAttachmentSigner, useFactory: () => new RunAttachmentSigner(dataSource) },
        RunsRepository,
        FeedbackStatsRepository,
        RunsService,
        ProjectsService,
      ],
      exports: [ProjectsService, RunsService],
    };
  }
}
