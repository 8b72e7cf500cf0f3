import { DynamicModule, Module } from '@nestjs/common';
import { ComparativeExperimentsRepository } from './comparative-experiments.repository';
import { ComparativeExperimentsService } from './comparative-experiments.service';
import { ExperimentCompareService } from './experiment-compare.service';
import { EXPERIMENT_FEEDBACK, EXPERIMENT_PROJECTS, EXPERIMENT_RUNS, type ExperimentPortTokens } from './experiment-ports';
import { ExperimentUploadService } from './experiment-upload.service';
import { ExperimentsController } from './experiments.controller';
import { V2DatasetsController } from './v2-datasets.controller';

export interface ExperimentsModuleOptions extends ExperimentPortTokens {
  /**
   * The host's module instances (the same objects it mounts) that export DatasetsService, ExamplesService
   * and DATASETS_DATA_SOURCE (DatasetsModule), and the classes named by the port tokens.
   */
  imports: DynamicModule[];
}

/**
 * Experiment upload and comparison (POST /datasets/upload-experiment, /datasets/{id}/runs, /datasets/{id}/compare)
 * and comparative experiments (/datasets/comparative, GET /datasets/{id}/comparative).
 * Needs EventBus and AuditPublisher from the host.
 */
@Module({})
export class ExperimentsModule {
  static forRoot(opts: ExperimentsModuleOptions): DynamicModule {
    return {
      module: ExperimentsModule,
      imports: opts.imports,
      controllers: [ExperimentsController, V2DatasetsController],
      providers: [
        { provide: EXPERIMENT_PROJECTS, useExisting: opts.projects },
        { provide: EXPERIMENT_RUNS, useExisting: opts.runs },
        { provide: EXPERIMENT_FEEDBACK, useExisting: opts.feedback },
        ExperimentUploadService,
        ExperimentCompareService,
        ComparativeExperimentsRepository,
        ComparativeExperimentsService,
      ],
      exports: [ExperimentUploadService, ExperimentCompareService],
    };
  }
}
