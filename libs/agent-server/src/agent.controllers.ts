import { Body, Header, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Patch, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import {
  agentRunCancelQuerySchema,
  parseBooleanWord,
  agentRunJoinStreamQuerySchema,
  agentRunListQuerySchema,
  type AgentAssistant,
  type AgentAssistantVersion,
  type AgentGraphSchemas,
  type AgentRun,
  type AgentThread,
  type AgentThreadState,
} from '@th/contracts';
import { parseOrThrow } from '@th/platform';
import { toRun } from './agent.repository';
import { AgentService, pathId } from './agent.service';
import { streamRun, streamThread, waitRun } from './sse';

export const AGENT_SERVICE = Symbol('AGENT_SERVICE');

@Controller()
export class HealthOkController {
  /** The control plane waits for this before marking a revision DEPLOYED: graphs loaded, database migrated. */
  @Get('ok')
  ok(): { ok: true } {
    return { ok: true };
  }
}

@Controller('assistants')
export class AssistantsController {
  constructor(@Inject(AGENT_SERVICE) private readonly agents: AgentService) {}

  @Post()
  @HttpCode(200)
  create(@Body() body: unknown): Promise<AgentAssistant> {
    return this.agents.createAssistant(body);
  }

  @Post('count')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8') // a bare number, still JSON
  count(@Body() body: unknown): Promise<number> {
    return this.agents.countAssistants(body);
  }

  @Post('search')
  @HttpCode(200)
  async search(@Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentAssistant[]> {
    const page = await this.agents.searchAssistants(body);
    res.setHeader('X-Pagination-Total', String(page.total));
    if (page.next !== null) res.setHeader('X-Pagination-Next', String(page.next));
    return page.items;
  }

  @Get(':assistant_id')
  get(@Param('assistant_id') id: string): Promise<AgentAssistant> {
    return this.agents.resolveAssistant(id);
  }

  @Patch(':assistant_id')
  update(@Param('assistant_id') id: string, @Body() body: unknown): Promise<AgentAssistant> {
    return this.agents.updateAssistant(id, body);
  }

  @Post(':assistant_id/versions')
  @HttpCode(200)
  versions(@Param('assistant_id') id: string, @Body() body: unknown): Promise<AgentAssistantVersion[]> {
    return this.agents.assistantVersions(id, body);
  }

  @Post(':assistant_id/latest')
  @HttpCode(200)
  setLatest(@Param('assistant_id') id: string, @Body() body: unknown): Promise<AgentAssistant> {
    return this.agents.setLatestVersion(id, body);
  }

  @Get(':assistant_id/graph')
  graph(@Param('assistant_id') id: string, @Query() query: Record<string, unknown>): Promise<unknown> {
    return this.agents.assistantGraphJson(id, query);
  }

  @Get(':assistant_id/schemas')
  schemas(@Param('assistant_id') id: string): Promise<AgentGraphSchemas> {
    return this.agents.assistantSchemas(id);
  }

  @Get(':assistant_id/subgraphs')
  subgraphs(@Param('assistant_id') id: string, @Query() query: Record<string, unknown>): Promise<unknown> {
    return this.agents.assistantSubgraphs(id, undefined, query);
  }

  @Get(':assistant_id/subgraphs/:namespace')
  subgraphsIn(@Param('assistant_id') id: string, @Param('namespace') namespace: string, @Query() query: Record<string, unknown>): Promise<unknown> {
    return this.agents.assistantSubgraphs(id, namespace, query);
  }

  @Delete(':assistant_id')
  @HttpCode(204)
  async remove(@Param('assistant_id') id: string, @Query() query: Record<string, unknown>): Promise<void> {
    await this.agents.deleteAssistant(id, query);
  }
}

@Controller('threads')
export class ThreadsController {
  constructor(@Inject(AGENT_SERVICE) private readonly agents: AgentService) {}

  @Post()
  @HttpCode(200)
  create(@Body() body: unknown): Promise<AgentThread> {
    return this.agents.createThread(body);
  }

  @Post('count')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8') // a bare number, still JSON
  count(@Body() body: unknown): Promise<number> {
    return this.agents.countThreads(body);
  }

  @Post('search')
  @HttpCode(200)
  search(@Body() body: unknown): Promise<AgentThread[]> {
    return this.agents.searchThreads(body);
  }

  @Get(':thread_id')
  get(@Param('thread_id') id: string): Promise<AgentThread> {
    return this.agents.getThread(id);
  }

  @Patch(':thread_id')
  patch(@Param('thread_id') id: string, @Body() body: unknown): Promise<AgentThread> {
    return this.agents.patchThread(id, body);
  }

  @Delete(':thread_id')
  @HttpCode(204)
  async remove(@Param('thread_id') id: string): Promise<void> {
    await this.agents.deleteThread(id);
  }

  @Get(':thread_id/state')
  state(@Param('thread_id') id: string, @Query('subgraphs') subgraphs?: string): Promise<AgentThreadState> {
    return this.agents.getState(id, parseBooleanWord(subgraphs ?? '') === true);
  }

  @Patch(':thread_id/state')
  @HttpCode(204)
  async patchState(@Param('thread_id') id: string, @Body() body: unknown): Promise<void> {
    await this.agents.patchState(id, body);
  }

  @Get(':thread_id/stream')
  async stream(@Param('thread_id') id: string, @Query() query: Record<string, unknown>, @Headers('last-event-id') lastEventId: string | undefined, @Res() res: Response): Promise<void> {
    await streamThread(this.agents, res, await this.agents.openThreadStream(id, query, lastEventId));
  }

  @Post(':thread_id/copy')
  @HttpCode(200)
  copy(@Param('thread_id') id: string): Promise<AgentThread> {
    return this.agents.copyThread(id);
  }

  @Post(':thread_id/state')
  @HttpCode(200)
  updateState(@Param('thread_id') id: string, @Body() body: unknown): Promise<{ checkpoint: AgentThreadState['checkpoint']; configurable: Record<string, unknown> }> {
    return this.agents.updateState(id, body);
  }

  @Post(':thread_id/state/checkpoint')
  @HttpCode(200)
  stateAtCheckpoint(@Param('thread_id') id: string, @Body() body: unknown): Promise<AgentThreadState> {
    return this.agents.getStateAtCheckpoint(id, body);
  }

  @Get(':thread_id/state/:checkpoint_id')
  stateAt(@Param('thread_id') id: string, @Param('checkpoint_id') checkpointId: string, @Query('subgraphs') subgraphs?: string): Promise<AgentThreadState> {
    return this.agents.getStateAt(id, { checkpoint_id: checkpointId }, parseBooleanWord(subgraphs ?? '') === true);
  }

  @Post(':thread_id/history')
  @HttpCode(200)
  history(@Param('thread_id') id: string, @Body() body: unknown): Promise<AgentThreadState[]> {
    return this.agents.getHistory(id, body);
  }

  @Get(':thread_id/history')
  historyGet(@Param('thread_id') id: string, @Query('limit') limit?: string): Promise<AgentThreadState[]> {
    return this.agents.getHistory(id, limit === undefined ? {} : { limit });
  }
}

@Controller()
export class RunsController {
  constructor(@Inject(AGENT_SERVICE) private readonly agents: AgentService) {}

  @Post('threads/:thread_id/runs')
  @HttpCode(200)
  async create(@Param('thread_id') threadId: string, @Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentRun> {
    const { run } = await this.agents.createRun(threadId, body);
    res.setHeader('Content-Location', `/threads/${run.thread_id}/runs/${run.run_id}`);
    return toRun(run);
  }

  @Post('runs')
  @HttpCode(200)
  async createStateless(@Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentRun> {
    const { run } = await this.agents.createRun(null, body);
    res.setHeader('Content-Location', `/runs/${run.run_id}`);
    return toRun(run);
  }

  @Post('runs/batch')
  @HttpCode(200)
  createBatch(@Body() body: unknown): Promise<AgentRun[]> {
    return this.agents.createBatch(body);
  }

  @Post('threads/:thread_id/runs/wait')
  async wait(@Param('thread_id') threadId: string, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.createRun(threadId, body);
    await waitRun(this.agents, res, { threadId: run.thread_id, run, cancelOnDisconnect: (b.on_disconnect ?? 'cancel') === 'cancel', dropAfter: false });
  }

  @Post('runs/wait')
  async waitStateless(@Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.createRun(null, body);
    await waitRun(this.agents, res, { threadId: null, run, cancelOnDisconnect: (b.on_disconnect ?? 'cancel') === 'cancel', dropAfter: (b.on_completion ?? 'delete') === 'delete' });
  }

  @Post('threads/:thread_id/runs/stream')
  async stream(@Param('thread_id') threadId: string, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.createRun(threadId, body, { stream: true });
    const cancel = (b.on_disconnect ?? (b.stream_resumable ? 'continue' : 'cancel')) === 'cancel';
    await streamRun(this.agents, res, { threadId: run.thread_id, run, lastEventId: undefined, cancelOnDisconnect: cancel, created: true, dropAfter: false });
  }

  @Post('runs/stream')
  async streamStateless(@Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.createRun(null, body, { stream: true });
    const cancel = (b.on_disconnect ?? (b.stream_resumable ? 'continue' : 'cancel')) === 'cancel';
    await streamRun(this.agents, res, { threadId: null, run, lastEventId: undefined, cancelOnDisconnect: cancel, created: true, dropAfter: (b.on_completion ?? 'delete') === 'delete' });
  }

  @Get('threads/:thread_id/runs')
  list(@Param('thread_id') threadId: string, @Query() query: Record<string, unknown>): Promise<AgentRun[]> {
    const q = parseOrThrow(agentRunListQuerySchema, query, ['query']);
    return this.agents.listRuns(threadId, q.limit, q.offset, q.status);
  }

  @Get('threads/:thread_id/runs/:run_id')
  get(@Param('thread_id') threadId: string, @Param('run_id') runId: string): Promise<AgentRun> {
    return this.agents.getRun(threadId, runId);
  }

  @Get('threads/:thread_id/runs/:run_id/join')
  join(@Param('thread_id') threadId: string, @Param('run_id') runId: string): Promise<unknown> {
    return this.agents.join(threadId, runId);
  }

  @Get('threads/:thread_id/runs/:run_id/stream')
  async joinStream(
    @Param('thread_id') threadId: string,
    @Param('run_id') runId: string,
    @Query() query: Record<string, unknown>,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    const q = parseOrThrow(agentRunJoinStreamQuerySchema, query, ['query']);
    const run = await this.agents.requireRun(threadId, runId);
    await streamRun(this.agents, res, { threadId: run.thread_id, run, lastEventId, cancelOnDisconnect: q.cancel_on_disconnect, created: false, dropAfter: false });
  }

  @Get('runs/:run_id/stream')
  async joinStreamStateless(@Param('run_id') runId: string, @Headers('last-event-id') lastEventId: string | undefined, @Req() req: Request, @Res() res: Response): Promise<void> {
    const q = parseOrThrow(agentRunJoinStreamQuerySchema, req.query, ['query']);
    const run = await this.agents.requireRun(null, pathId(runId, 'run_id'));
    await streamRun(this.agents, res, { threadId: null, run, lastEventId, cancelOnDisconnect: q.cancel_on_disconnect, created: false, dropAfter: false });
  }

  @Post('threads/:thread_id/runs/:run_id/cancel')
  async cancel(@Param('thread_id') threadId: string, @Param('run_id') runId: string, @Query() query: Record<string, unknown>, @Res() res: Response): Promise<void> {
    const q = parseOrThrow(agentRunCancelQuerySchema, query, ['query']);
    await this.agents.cancelRun(threadId, runId, q.action, q.wait);
    res.status(q.wait ? 204 : 202).end();
  }

  @Delete('threads/:thread_id/runs/:run_id')
  @HttpCode(204)
  async remove(@Param('thread_id') threadId: string, @Param('run_id') runId: string): Promise<void> {
    await this.agents.deleteRun(threadId, runId);
  }
}
