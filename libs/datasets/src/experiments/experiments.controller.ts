import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import {
  compareDatasetParamSchema,
  experimentCompareRequestSchema,
  experimentUploadRequestSchema,
  type ExampleWithRuns,
  type ExperimentCompareResponse,
  type ExperimentUploadResponse,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { ExperimentCompareService } from './experiment-compare.service';
import { ExperimentUploadService } from './experiment-upload.service';

@Controller('datasets')
export class ExperimentsController {
  constructor(
    private readonly uploads: ExperimentUploadService,
    private readonly comparison: ExperimentCompareService,
  ) {}

  @Post('upload-experiment')
  @TrackedOperation()
  @HttpCode(200)
  upload(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<ExperimentUploadResponse> {
    return this.uploads.upload(identity, parseOrThrow(experimentUploadRequestSchema, body, ['body']));
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
