import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import {
  datasetIdParamSchema,
  exampleCreateManySchema,
  exampleCreateSchema,
  exampleCreateWithDatasetSchema,
  exampleDeleteManyBodySchema,
  exampleDeleteManyQuerySchema,
  exampleGetQuerySchema,
  exampleIdParamSchema,
  exampleListQuerySchema,
  exampleMetadataPatchSchema,
  exampleUpdateManySchema,
  exampleUpdateSchema,
  exampleUpdateWithIdSchema,
  type Example,
  type ExampleBulkResult,
  type ExampleCreate,
  type ExampleUpdateWithId,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { TrackedOperation } from '@th/bus';
import { ValidationFailed, parseOrThrow, type RawBodyRequest } from '@th/platform';
import { ExamplesService } from './examples.service';
import { MultipartError, multipartBoundary, parseMultipart } from './multipart';

@Controller('examples')
export class ExamplesController {
  constructor(private readonly examples: ExamplesService) {}

  @Post()
  @TrackedOperation('create_example')
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example> {
    const e = parseOrThrow(exampleCreateWithDatasetSchema, body, ['body']);
    return this.examples.createOne(identity, e.dataset_id, e);
  }

  @Post('bulk')
  @TrackedOperation('create_examples')
  @HttpCode(200)
  createBulk(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example[]> {
    return this.examples.createForDatasets(identity, parseOrThrow(exampleCreateManySchema, body, ['body']));
  }

  @Patch('bulk')
  @TrackedOperation('update_examples')
  updateBulk(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example[]> {
    return this.examples.updateMany(identity, parseOrThrow(exampleUpdateManySchema, body, ['body']));
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Example[]> {
    return this.examples.list(identity, parseOrThrow(exampleListQuerySchema, query, ['query']));
  }

  @Delete()
  @TrackedOperation('delete_examples')
  async deleteMany(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Record<string, never>> {
    await this.examples.deleteMany(identity, parseOrThrow(exampleDeleteManyQuerySchema, query, ['query']).example_ids);
    return {};
  }

  @Get(':example_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<Example> {
    const { example_id } = parseOrThrow(exampleIdParamSchema, params, ['path']);
    return this.examples.get(identity, example_id, parseOrThrow(exampleGetQuerySchema, query, ['query']).as_of);
  }

  @Patch(':example_id')
  @TrackedOperation('update_example', { resourceType: 'example', resourceParam: 'example_id' })
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<Example> {
    const { example_id } = parseOrThrow(exampleIdParamSchema, params, ['path']);
    return this.examples.updateOne(identity, example_id, parseOrThrow(exampleUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':example_id')
  @TrackedOperation('delete_example', { resourceType: 'example', resourceParam: 'example_id' })
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.examples.deleteOne(identity, parseOrThrow(exampleIdParamSchema, params, ['path']).example_id);
    return {};
  }
}

/** Reads the SDK's multipart examples body: parts `<id>`, `<id>.inputs`, `<id>.outputs` (attachments are not supported). */
function examplesFromMultipart(contentType: string | undefined, raw: Buffer | undefined): Map<string, Record<string, unknown>> {
  const boundary = multipartBoundary(contentType);
  if (!boundary || !raw) throw new ValidationFailed([{ loc: ['body'], msg: 'expected a multipart/form-data body', type: 'value_error' }]);
  let parts;
  try {
    parts = parseMultipart(raw, boundary);
  } catch (err) {
    if (err instanceof MultipartError) throw new ValidationFailed([{ loc: ['body'], msg: err.message, type: 'value_error' }]);
    throw err;
  }
  const byId = new Map<string, Record<string, unknown>>();
  for (const part of parts) {
    const dot = part.name.indexOf('.');
    const id = dot < 0 ? part.name : part.name.slice(0, dot);
    const field = dot < 0 ? '' : part.name.slice(dot + 1);
    if (field.startsWith('attachment') || (field !== '' && field !== 'inputs' && field !== 'outputs')) {
      throw new ValidationFailed([{ loc: ['body', part.name], msg: 'example attachments are not supported by this server', type: 'value_error' }]);
    }
    let value: unknown;
    try {
      value = JSON.parse(part.data.toString('utf8'));
    } catch (err) {
      throw new ValidationFailed([{ loc: ['body', part.name], msg: `JSON decode error: ${(err as Error).message}`, type: 'json_invalid' }]);
    }
    const entry = byId.get(id) ?? {};
    if (field === '') {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ValidationFailed([{ loc: ['body', part.name], msg: 'must be a JSON object', type: 'dict_type' }]);
      Object.assign(entry, value);
    } else entry[field] = value;
    byId.set(id, entry);
  }
  if (byId.size === 0) throw new ValidationFailed([{ loc: ['body'], msg: 'no examples in the body', type: 'missing' }]);
  return byId;
}

/** The SDK's examples endpoints (`{apiUrl}/v1/platform/datasets/...`; `/api/v1/platform/...` arrives here too). */
@Controller('v1/platform/datasets')
export class PlatformExamplesController {
  constructor(private readonly examples: ExamplesService) {}

  @Post(':dataset_id/examples')
  @TrackedOperation('create_examples', { resourceType: 'dataset', resourceParam: 'dataset_id' })
  @HttpCode(201)
  async create(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Req() req: RawBodyRequest): Promise<ExampleBulkResult> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const parsed = examplesFromMultipart(req.headers['content-type'], req.rawBody);
    const list: ExampleCreate[] = [...parsed].map(([id, e]) => parseOrThrow(exampleCreateSchema, { ...e, id }, ['body', id]));
    const created = await this.examples.createMany(identity, dataset_id, list, { locOf: (i) => ['body', list[i].id as string] });
    return { example_ids: created.map((e) => e.id), count: created.length };
  }

  @Patch(':dataset_id/examples')
  @TrackedOperation('update_examples')
  async update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Req() req: RawBodyRequest): Promise<ExampleBulkResult> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const parsed = examplesFromMultipart(req.headers['content-type'], req.rawBody);
    const list: ExampleUpdateWithId[] = [...parsed].map(([id, e]) => parseOrThrow(exampleUpdateWithIdSchema, { ...e, id }, ['body', id]));
    const updated = await this.examples.updateMany(identity, list, dataset_id);
    return { example_ids: updated.map((e) => e.id), count: updated.length };
  }

  /** The SDK's updateDatasetSplits: `dataset_split` array_add / array_remove on many examples. */
  @Patch(':dataset_id/examples/metadata')
  @TrackedOperation('update_dataset_splits', { resourceType: 'dataset', resourceParam: 'dataset_id' })
  async metadata(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ example_ids: string[] }> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const b = parseOrThrow(exampleMetadataPatchSchema, body, ['body']);
    for (const op of b.operations) {
      for (const split of op.values) await this.examples.updateSplits(identity, dataset_id, split, b.example_ids, op.operation.toLowerCase() === 'array_remove');
    }
    return { example_ids: b.example_ids };
  }

  @Post('examples/delete')
  @TrackedOperation('delete_examples')
  async delete(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Record<string, never>> {
    const b = parseOrThrow(exampleDeleteManyBodySchema, body, ['body']);
    await this.examples.deleteMany(identity, b.example_ids, b.hard_delete ?? false);
    return {};
  }
}
