import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import {
  feedbackConfigCreateSchema,
  feedbackConfigDeleteQuerySchema,
  feedbackConfigListQuerySchema,
  feedbackConfigUpdateSchema,
  feedbackCreateSchema,
  feedbackIdParamSchema,
  feedbackListQuerySchema,
  feedbackUpdateSchema,
  type Feedback,
  type FeedbackConfigRecord,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { FeedbackConfigService } from './feedback-config.service';
import { FeedbackQueryService } from './feedback-query.service';
import { FeedbackService } from './feedback.service';

/** Feedback writes: served by ingest. */
@Controller('feedback')
export class FeedbackWriteController {
  constructor(private readonly feedback: FeedbackService) {}

  @Post()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Feedback> {
    return this.feedback.create(identity, parseOrThrow(feedbackCreateSchema, body, ['body']));
  }

  @Patch(':feedback_id')
  update(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<Feedback> {
    const { feedback_id } = parseOrThrow(feedbackIdParamSchema, params, ['path']);
    return this.feedback.update(identity, feedback_id, parseOrThrow(feedbackUpdateSchema, body ?? {}, ['body']));
  }

  @Delete(':feedback_id')
  @HttpCode(200)
  async delete(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Record<string, never>> {
    const { feedback_id } = parseOrThrow(feedbackIdParamSchema, params, ['path']);
    await this.feedback.delete(identity, feedback_id);
    return {};
  }
}

/** Feedback reads: served by query. */
@Controller('feedback')
export class FeedbackReadController {
  constructor(private readonly feedback: FeedbackQueryService) {}

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Feedback[]> {
    return this.feedback.list(identity, parseOrThrow(feedbackListQuerySchema, query, ['query']));
  }

  @Get(':feedback_id')
  get(@CurrentIdentity() identity: Identity, @Param() params: unknown): Promise<Feedback> {
    const { feedback_id } = parseOrThrow(feedbackIdParamSchema, params, ['path']);
    return this.feedback.get(identity, feedback_id);
  }
}

/** The workspace's feedback configs (one per feedback key): served by ingest, which enforces them on POST /feedback. */
@Controller('feedback-configs')
export class FeedbackConfigsController {
  constructor(private readonly configs: FeedbackConfigService) {}

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<FeedbackConfigRecord[]> {
    const q = parseOrThrow(feedbackConfigListQuerySchema, query, ['query']);
    return this.configs.list(identity, q.key, { name_contains: q.name_contains, limit: q.limit, offset: q.offset });
  }

  @Post()
  @HttpCode(200)
  create(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<FeedbackConfigRecord> {
    return this.configs.create(identity, parseOrThrow(feedbackConfigCreateSchema, body, ['body']));
  }

  @Patch()
  update(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<FeedbackConfigRecord> {
    return this.configs.update(identity, parseOrThrow(feedbackConfigUpdateSchema, body ?? {}, ['body']));
  }

  @Delete()
  @HttpCode(200)
  async delete(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<Record<string, never>> {
    await this.configs.delete(identity, parseOrThrow(feedbackConfigDeleteQuerySchema, query, ['query']).feedback_key);
    return {};
  }
}
