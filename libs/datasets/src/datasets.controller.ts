import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import {
  datasetCloneSchema,
  datasetCreateSchema,
  datasetDeleteManyQuerySchema,
  datasetIdParamSchema,
  datasetListQuerySchema,
  datasetSplitsQuerySchema,
  datasetSplitsUpdateSchema,
  datasetTagUpdateSchema,
  datasetUpdateSchema,
  datasetVersionQuerySchema,
  datasetVersionsDiffQuerySchema,
  datasetVersionsListQuerySchema,
  exampleListQuerySchema,
  shareTokenParamSchema,
  type Dataset,
  type DatasetShare,
  type DatasetVersion,
  type DatasetVersionsDiff,
  type Example,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity, Public } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import { parseOrThrow } from '@th/platform';
import { DatasetsService } from './datasets.service';
import { ExamplesService } from './examples.service';
import { presentDataset } from './present';

@Controller('datasets')
export class DatasetsController {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly examples: ExamplesService,
  ) {}

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Dataset> {
    return this.datasets.create(identity, parseOrThrow(datasetCreateSchema, body, ['body']));
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Dataset[]> {
    return this.datasets.list(identity, parseOrThrow(datasetListQuerySchema, query, ['query']));
  }

  @Delete()
  @TrackedOperation()
  async deleteMany(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Record<string, never>> {
    await this.datasets.deleteMany(identity, parseOrThrow(datasetDeleteManyQuerySchema, query, ['query']).id);
    return {};
  }

  @Post('clone')
  @TrackedOperation()
  @HttpCode(200)
  clone(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example[]> {
    return this.examples.clone(identity, parseOrThrow(datasetCloneSchema, body, ['body']));
  }

  @Get(':dataset_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Dataset> {
    return this.datasets.get(identity, parseOrThrow(datasetIdParamSchema, params, ['path']).dataset_id);
  }

  @Patch(':dataset_id')
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<Dataset> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    return this.datasets.update(identity, dataset_id, parseOrThrow(datasetUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':dataset_id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.datasets.delete(identity, parseOrThrow(datasetIdParamSchema, params, ['path']).dataset_id);
    return {};
  }

  /** JSON lines (one example each) in OpenAI's chat fine-tuning form, as the SDKs' read_dataset_openai_finetuning reads them. */
  @Get(':dataset_id/openai_ft')
  async openAiFineTuning(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Res() res: Response): Promise<void> {
    const body = await this.examples.openAiFineTuning(identity, parseOrThrow(datasetIdParamSchema, params, ['path']).dataset_id);
    res.status(200).type('application/jsonl').send(body);
  }

  @Get(':dataset_id/versions')
  versions(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<DatasetVersion[]> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    return this.datasets.versions(identity, dataset_id, parseOrThrow(datasetVersionsListQuerySchema, query, ['query']));
  }

  @Get(':dataset_id/versions/diff')
  diff(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<DatasetVersionsDiff> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const q = parseOrThrow(datasetVersionsDiffQuerySchema, query, ['query']);
    return this.examples.diff(identity, dataset_id, q.from_version, q.to_version);
  }

  @Get(':dataset_id/version')
  version(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<DatasetVersion> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    return this.datasets.version(identity, dataset_id, parseOrThrow(datasetVersionQuerySchema, query, ['query']));
  }

  @Put(':dataset_id/tags')
  @TrackedOperation()
  tags(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<DatasetVersion> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    return this.datasets.updateTag(identity, dataset_id, parseOrThrow(datasetTagUpdateSchema, body, ['body']));
  }

  @Get(':dataset_id/splits')
  splits(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<string[]> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    return this.examples.splits(identity, dataset_id, parseOrThrow(datasetSplitsQuerySchema, query, ['query']).as_of);
  }

  @Put(':dataset_id/splits')
  @TrackedOperation()
  updateSplits(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<string[]> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const b = parseOrThrow(datasetSplitsUpdateSchema, body, ['body']);
    return this.examples.updateSplits(identity, dataset_id, b.split_name, b.examples, b.remove ?? false);
  }

  /** The share state, or JSON `null` when the dataset is not shared (Nest would send an empty body for null). */
  @Get(':dataset_id/share')
  async shareState(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Res() res: Response): Promise<void> {
    const state: DatasetShare | null = await this.datasets.shareState(identity, parseOrThrow(datasetIdParamSchema, params, ['path']).dataset_id);
    res.status(200).type('application/json').send(JSON.stringify(state));
  }

  @Put(':dataset_id/share')
  @TrackedOperation()
  share(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<DatasetShare> {
    return this.datasets.share(identity, parseOrThrow(datasetIdParamSchema, params, ['path']).dataset_id);
  }

  @Delete(':dataset_id/share')
  @TrackedOperation()
  async unshare(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.datasets.unshare(identity, parseOrThrow(datasetIdParamSchema, params, ['path']).dataset_id);
    return {};
  }
}

/** Read-only access to a shared dataset by its share token, without an API key. */
@Controller('public')
export class PublicDatasetsController {
  constructor(
    private readonly datasets: DatasetsService,
    private readonly examples: ExamplesService,
  ) {}

  @Public()
  @Get(':share_token/datasets')
  async dataset(@Param() params: unknown): Promise<Dataset> {
    return presentDataset(await this.datasets.byShareToken(parseOrThrow(shareTokenParamSchema, params, ['path']).share_token));
  }

  @Public()
  @Get(':share_token/examples')
  async examplesOf(@Param() params: unknown, @Query() query: unknown): Promise<Example[]> {
    const d = await this.datasets.byShareToken(parseOrThrow(shareTokenParamSchema, params, ['path']).share_token);
    return this.examples.publicList(d, parseOrThrow(exampleListQuerySchema, query, ['query']));
  }
}
