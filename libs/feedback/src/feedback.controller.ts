import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import type { Request } from 'express';
import {
  feedbackConfigCreateSchema,
  feedbackConfigDeleteQuerySchema,
  feedbackConfigListQuerySchema,
  feedbackConfigUpdateSchema,
  feedbackCreateSchema,
  feedbackFromTokenQuerySchema,
  feedbackFromTokenSchema,
  feedbackIdParamSchema,
  feedbackTokenListQuerySchema,
  feedbackTokenParamSchema,
  feedbackTokensCreateSchema,
  feedbackListQuerySchema,
  feedbackUpdateSchema,
  type Feedback,
  type FeedbackConfigRecord,
  type FeedbackToken,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity, Public } from '@th/auth';
import { parseOrThrow, requestBaseUrl } from '@th/platform';
import { FeedbackConfigService } from './feedback-config.service';
import { FeedbackQueryService } from './feedback-query.service';
import { FeedbackService } from './feedback.service';
import { FeedbackTokenService } from './feedback-token.service';

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

/**
 * Presigned feedback tokens: issued with a key (POST /feedback/tokens), used without one. Served by ingest,
 * which writes the feedback; the gateway forwards the token routes without a key (isPublicRoute).
 */
@Controller('feedback/tokens')
export class FeedbackTokensController {
  constructor(private readonly tokens: FeedbackTokenService) {}

  @Post()
  @HttpCode(200)
  async create(@CurrentIdentity() identity: Identity, @Body() body: unknown, @Req() req: Request): Promise<FeedbackToken | FeedbackToken[]> {
    const parsed = parseOrThrow(feedbackTokensCreateSchema, body, ['body']);
    const base = `${requestBaseUrl(req)}${req.originalUrl.split('?')[0].replace(/\/+$/, '')}`;
    const issued = await this.tokens.create(identity, Array.isArray(parsed) ? parsed : [parsed], base);
    return Array.isArray(parsed) ? issued : issued[0];
  }

  @Get()
  list(@CurrentIdentity() identity: Identity, @Query() query: unknown): Promise<FeedbackToken[]> {
    return this.tokens.list(identity, parseOrThrow(feedbackTokenListQuerySchema, query, ['query']));
  }

  @Public()
  @Post(':token')
  @HttpCode(200)
  async submit(@Param() params: unknown, @Body() body: unknown): Promise<Record<string, never>> {
    const { token } = parseOrThrow(feedbackTokenParamSchema, params, ['path']);
    await this.tokens.submit(token, parseOrThrow(feedbackFromTokenSchema, body ?? {}, ['body']));
    return {};
  }

  /** A link a browser can follow: the feedback's fields in the query string (correction as JSON or text). */
  @Public()
  @Get(':token')
  async submitByLink(@Param() params: unknown, @Query() query: unknown): Promise<Record<string, never>> {
    const { token } = parseOrThrow(feedbackTokenParamSchema, params, ['path']);
    const q = parseOrThrow(feedbackFromTokenQuerySchema, query, ['query']);
    await this.tokens.submit(token, { score: q.score, value: q.value, comment: q.comment, correction: q.correction === undefined ? undefined : jsonOrText(q.correction) });
    return {};
  }
}

function jsonOrText(s: string): Record<string, unknown> | string {
  try {
    const v: unknown = JSON.parse(s);
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : s;
  } catch {
    return s;
  }
}
