import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  v2ThreadIdParamSchema,
  v2ThreadQuerySchema,
  v2ThreadShareSchema,
  v2ThreadsAggregateStatsSchema,
  v2ThreadStatsQuerySchema,
  v2ThreadTracesQuerySchema,
  type Identity,
} from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import { parseOrThrow } from '@th/platform';
import { SharesService } from './shares.service';
import { V2ThreadsService } from './v2-threads.service';
import type { V2Page } from './v2-runs.service';

@Controller('api/v2/threads')
export class V2ThreadsController {
  constructor(
    private readonly threads: V2ThreadsService,
    private readonly shares: SharesService,
  ) {}

  @Post('query')
  @HttpCode(200)
  query(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<V2Page<Record<string, unknown>>> {
    return this.threads.query(identity, parseOrThrow(v2ThreadQuerySchema, body ?? {}, ['body']));
  }

  @Post('stats')
  @HttpCode(200)
  aggregate(@CurrentIdentity() identity: Identity, @Body() body: unknown): Promise<Record<string, unknown>> {
    return this.threads.aggregate(identity, parseOrThrow(v2ThreadsAggregateStatsSchema, body ?? {}, ['body']));
  }

  @Get(':thread_id/traces')
  traces(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<V2Page<Record<string, unknown>>> {
    const { thread_id } = parseOrThrow(v2ThreadIdParamSchema, params, ['path']);
    return this.threads.traces(identity, thread_id, parseOrThrow(v2ThreadTracesQuerySchema, query, ['query']));
  }

  @Get(':thread_id/stats')
  stats(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<Record<string, unknown>> {
    const { thread_id } = parseOrThrow(v2ThreadIdParamSchema, params, ['path']);
    return this.threads.stats(identity, thread_id, parseOrThrow(v2ThreadStatsQuerySchema, query, ['query']));
  }

  @Post(':thread_id/share')
  @HttpCode(200)
  share(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Body() body: unknown): Promise<{ share_token: string }> {
    const { thread_id } = parseOrThrow(v2ThreadIdParamSchema, params, ['path']);
    return this.shares.shareThread(identity, thread_id, parseOrThrow(v2ThreadShareSchema, body ?? {}, ['body']).project_id);
  }

  @Get(':thread_id/share')
  shareState(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<{ share_token: string }> {
    const { thread_id } = parseOrThrow(v2ThreadIdParamSchema, params, ['path']);
    return this.shares.threadShare(identity, thread_id, parseOrThrow(v2ThreadShareSchema, query, ['query']).project_id);
  }

  @Delete(':thread_id/share')
  @HttpCode(204)
  unshare(@CurrentIdentity() identity: Identity, @Param() params: unknown, @Query() query: unknown): Promise<void> {
    const { thread_id } = parseOrThrow(v2ThreadIdParamSchema, params, ['path']);
    return this.shares.unshareThread(identity, thread_id, parseOrThrow(v2ThreadShareSchema, query, ['query']).project_id);
  }
}
