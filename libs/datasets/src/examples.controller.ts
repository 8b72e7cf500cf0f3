import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import type { Response } from 'express';
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
  attachmentDownloadParamSchema,
  attachmentDownloadQuerySchema,
  type Example,
  type ExampleBulkResult,
  type ExampleCreate,
  type ExampleUpdateWithId,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity, Public } from '@th/auth';
import { TrackedOperation } from '@th/audit-client';
import {
  EventLoopPacer,
  JsonTooDeepError,
  jsonTooDeepItem,
  multipartBoundary,
  parseClientJson,
  parseMultipartOr422,
  parseOrThrow,
  parseOrThrowPaced,
  ValidationFailed,
  type RawBodyRequest,
} from '@th/platform';
import { ExamplesService } from './examples.service';
import type { AttachmentUpload } from './attachments';

@Controller('examples')
export class ExamplesController {
  constructor(private readonly examples: ExamplesService) {}

  @Post()
  @TrackedOperation()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example> {
    const e = parseOrThrow(exampleCreateWithDatasetSchema, body, ['body']);
    return this.examples.createOne(identity, e.dataset_id, e);
  }

  @Post('bulk')
  @TrackedOperation()
  @HttpCode(200)
  async createBulk(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example[]> {
    return this.examples.createForDatasets(identity, await parseOrThrowPaced(exampleCreateManySchema, body, ['body']));
  }

  @Patch('bulk')
  @TrackedOperation()
  async updateBulk(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Example[]> {
    return this.examples.updateMany(identity, await parseOrThrowPaced(exampleUpdateManySchema, body, ['body']));
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Example[]> {
    return this.examples.list(identity, parseOrThrow(exampleListQuerySchema, query, ['query']));
  }

  @Delete()
  @TrackedOperation()
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
  @TrackedOperation()
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<Example> {
    const { example_id } = parseOrThrow(exampleIdParamSchema, params, ['path']);
    return this.examples.updateOne(identity, example_id, parseOrThrow(exampleUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':example_id')
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    await this.examples.deleteOne(identity, parseOrThrow(exampleIdParamSchema, params, ['path']).example_id);
    return {};
  }
}

interface MultipartExamples {
  /** JSON fields by example id, in body order. */
  byId: Map<string, Record<string, unknown>>;
  /** Files by example id. */
  files: Map<string, AttachmentUpload[]>;
}

/** The mime type of an attachment part (`<mime>; length=<n>`); the length, when given, must match the bytes. */
function attachmentMime(partName: string, contentType: string, size: number): string {
  const [type, ...params] = contentType.split(';').map((x) => x.trim());
  if (!/^[\w.+-]+\/[\w.+-]+$/.test(type)) throw new ValidationFailed([{ loc: ['body', partName], msg: `invalid attachment content type "${contentType}"`, type: 'value_error' }]);
  const length = params.find((p) => /^length=/i.test(p));
  if (length !== undefined && Number(length.slice(7)) !== size) {
    throw new ValidationFailed([{ loc: ['body', partName], msg: `attachment length ${length.slice(7)} does not match its ${size} bytes`, type: 'value_error' }]);
  }
  return type.toLowerCase();
}

/** Reads the SDK's multipart examples body: parts `<id>`, `<id>.inputs`, `<id>.outputs`, `<id>.attachments_operations`, `<id>.attachment.<name>`. */
async function examplesFromMultipart(contentType: string | undefined, raw: Buffer | undefined): Promise<MultipartExamples> {
  const boundary = multipartBoundary(contentType);
  if (!boundary || !raw) throw new ValidationFailed([{ loc: ['body'], msg: 'expected a multipart/form-data body', type: 'value_error' }]);
  const pacer = new EventLoopPacer();
  const parts = await parseMultipartOr422(raw, boundary, pacer);
  const byId = new Map<string, Record<string, unknown>>();
  const files = new Map<string, AttachmentUpload[]>();
  for (const part of parts) {
    if (pacer.due()) await pacer.yield();
    const dot = part.name.indexOf('.');
    const id = dot < 0 ? part.name : part.name.slice(0, dot);
    const field = dot < 0 ? '' : part.name.slice(dot + 1);
    if (field.startsWith('attachment.')) {
      const name = field.slice('attachment.'.length);
      if (name === '') throw new ValidationFailed([{ loc: ['body', part.name], msg: 'attachment without a name', type: 'value_error' }]);
      const list = files.get(id) ?? [];
      if (list.some((f) => f.name === name)) throw new ValidationFailed([{ loc: ['body', part.name], msg: `attachment "${name}" appears twice`, type: 'value_error' }]);
      list.push({ name, mime_type: attachmentMime(part.name, part.contentType, part.data.length), data: Buffer.from(part.data) });
      files.set(id, list);
      if (!byId.has(id)) byId.set(id, {});
      continue;
    }
    if (field !== '' && field !== 'inputs' && field !== 'outputs' && field !== 'attachments_operations') {
      throw new ValidationFailed([{ loc: ['body', part.name], msg: `unknown example part "${field}"`, type: 'value_error' }]);
    }
    let value: unknown;
    try {
      value = parseClientJson(part.data.toString('utf8'));
    } catch (err) {
      if (err instanceof JsonTooDeepError) throw new ValidationFailed([jsonTooDeepItem(err, ['body', part.name])]);
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
  return { byId, files };
}

/** The SDK's examples endpoints (`{apiUrl}/v1/platform/datasets/...`; `/api/v1/platform/...` arrives here too). */
@Controller('v1/platform/datasets')
export class PlatformExamplesController {
  constructor(private readonly examples: ExamplesService) {}

  @Post(':dataset_id/examples')
  @TrackedOperation()
  @HttpCode(201)
  async create(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Req() req: RawBodyRequest): Promise<ExampleBulkResult> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const { byId, files } = await examplesFromMultipart(req.headers['content-type'], req.rawBody);
    const list: ExampleCreate[] = [...byId].map(([id, e]) => parseOrThrow(exampleCreateSchema, { ...e, id }, ['body', id]));
    const uploads = list.map((e) => files.get(e.id as string) ?? []);
    const created = await this.examples.createMany(identity, dataset_id, list, { locOf: (i) => ['body', list[i].id as string], uploads });
    return { example_ids: created.map((e) => e.id), count: created.length };
  }

  @Patch(':dataset_id/examples')
  @TrackedOperation()
  async update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Req() req: RawBodyRequest): Promise<ExampleBulkResult> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const { byId, files } = await examplesFromMultipart(req.headers['content-type'], req.rawBody);
    const list: ExampleUpdateWithId[] = [...byId].map(([id, e]) => parseOrThrow(exampleUpdateWithIdSchema, { ...e, id }, ['body', id]));
    const uploads = list.map((e) => files.get(e.id) ?? []);
    const updated = await this.examples.updateMany(identity, list, dataset_id, { uploads, locOf: (i) => ['body', list[i].id] });
    return { example_ids: updated.map((e) => e.id), count: updated.length };
  }

  /** The SDK's updateDatasetSplits: `dataset_split` array_add / array_remove on many examples. */
  @Patch(':dataset_id/examples/metadata')
  @TrackedOperation()
  async metadata(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ example_ids: string[] }> {
    const { dataset_id } = parseOrThrow(datasetIdParamSchema, params, ['path']);
    const b = parseOrThrow(exampleMetadataPatchSchema, body, ['body']);
    for (const op of b.operations) {
      for (const split of op.values) await this.examples.updateSplits(identity, dataset_id, split, b.example_ids, op.operation.toLowerCase() === 'array_remove');
    }
    return { example_ids: b.example_ids };
  }

  @Post('examples/delete')
  @HttpCode(200) // a deletion, not a creation: 200 as documented
  @TrackedOperation()
  async delete(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Record<string, never>> {
    const b = parseOrThrow(exampleDeleteManyBodySchema, body, ['body']);
    await this.examples.deleteMany(identity, b.example_ids, b.hard_delete ?? false);
    return {};
  }
}

/** Downloads of example attachments through the signed, expiring URLs in `attachment_urls` (no API key). */
@Controller('public/example-attachments')
export class AttachmentDownloadController {
  constructor(private readonly examples: ExamplesService) {}

  @Public()
  @Get(':attachment_id')
  async download(@Param() params: unknown, @Query() query: unknown, @Res() res: Response): Promise<void> {
    const { attachment_id } = parseOrThrow(attachmentDownloadParamSchema, params, ['path']);
    const q = parseOrThrow(attachmentDownloadQuerySchema, query, ['query']);
    const file = await this.examples.download(attachment_id, q.expires, q.signature);
    res.status(200).setHeader('Content-Type', file.mime_type).setHeader('Content-Length', String(file.data.length)).setHeader('Cache-Control', 'private, max-age=300');
    res.end(file.data);
  }
}
