import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  comparativeExperimentCreateSchema,
  comparativeExperimentIdParamSchema,
  comparativeExperimentListQuerySchema,
  compareDatasetParamSchema,
  experimentCompareRequestSchema,
  experimentUploadRequestSchema,
  type ComparativeExperiment,
  type ExampleWithRuns,
  type ExperimentCompareResponse,
  type ExperimentUploadResponse,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow, parseOrThrowPaced } from '@th/platform';
import { ComparativeExperimentsService } from './comparative-experiments.service';
import { ExperimentCompareService } from './experiment-compare.service';
import { ExperimentUploadService } from './experiment-upload.service';

@Controller('datasets')
export class ExperimentsController {
  constructor(
    private readonly uploads: ExperimentUploadService,
    private readonly comparison: ExperimentCompareService,
    private readonly comparative: ComparativeExperimentsService,
  ) {}

  @Post('comparative')
  @TrackedOperation()
  @HttpCode(200)
  createComparative(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<ComparativeExperiment> {
    return this.comparative.create(identity, parseOrThrow(comparativeExperimentCreateSchema, body, ['body']));
  }

  @Delete('comparative/:comparative_experiment_id')
  @TrackedOperation()
  @HttpCode(200)
  async deleteComparative(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.comparative.delete(identity, parseOrThrow(comparativeExperimentIdParamSchema, params, ['path']).comparative_experiment_id);
    return {};
  }

  @Get(':dataset_id/comparative')
  listComparative(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<ComparativeExperiment[]> {
    const { dataset_id } = parseOrThrow(compareDatasetParamSchema, params, ['path']);
    return this.comparative.listForDataset(identity, dataset_id, parseOrThrow(comparativeExperimentListQuerySchema, query, ['query']));
  }

  @Post('upload-experiment')
  @TrackedOperation()
  @HttpCode(200)
  async upload(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<ExperimentUploadResponse> {
    return this.uploads.upload(identity, await parseOrThrowPaced(experimentUploadRequestSchema, body, ['body']));
  }

  /** LangSmith's form: the dataset's examples, each with the runs of the chosen experiments. */
  @Post(':dataset_id/runs')
  @HttpCode(200)
  async examplesWithRuns(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<ExampleWithRuns[]> {
    const { dataset_id } = parseOrThrow(compareDatasetParamSchema, params, ['path']);
    return (await this.comparison.compare(identity, dataset_id, parseOrThrow(experimentCompareRequestSchema, body, ['body']))).examples;
  }

  /** The same page of examples plus the chosen experiments with their aggregates. */
  @Post(':dataset_id/compare')
  @HttpCode(200)
  compare(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<ExperimentCompareResponse> {
    const { dataset_id } = parseOrThrow(compareDatasetParamSchema, params, ['path']);
    return this.comparison.compare(identity, dataset_id, parseOrThrow(experimentCompareRequestSchema, body, ['body']));
  }
}
