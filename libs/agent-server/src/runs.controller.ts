import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { agentRunCancelQuerySchema, agentRunJoinStreamQuerySchema, agentRunListQuerySchema, type AgentRun } from '@th/contracts';
import { parseOrThrow } from '@th/platform';
import { toRun } from './agent.repository';
import { AgentService, pathId } from './agent.service';
import { streamRun, waitRun } from './sse';
import { AGENT_SERVICE } from './agent-service.token';

@Controller()
export class RunsController {
  constructor(@Inject(AGENT_SERVICE) private readonly agents: AgentService) {}

  @Post('threads/:thread_id/runs')
  @HttpCode(200)
  async create(@Param('thread_id') threadId: string, @Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentRun> {
    const { run } = await this.agents.runs.createRun(threadId, body);
    res.setHeader('Content-Location', `/threads/${run.thread_id}/runs/${run.run_id}`);
    return toRun(run);
  }

  @Post('runs')
  @HttpCode(200)
  async createStateless(@Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<AgentRun> {
    const { run } = await this.agents.runs.createRun(null, body);
    res.setHeader('Content-Location', `/runs/${run.run_id}`);
    return toRun(run);
  }

  @Post('runs/batch')
  @HttpCode(200)
  createBatch(@Body() body: unknown): Promise<AgentRun[]> {
    return this.agents.runs.createBatch(body);
  }

  @Post('threads/:thread_id/runs/wait')
  async wait(@Param('thread_id') threadId: string, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.runs.createRun(threadId, body);
    await waitRun(this.agents, res, { threadId: run.thread_id, run, cancelOnDisconnect: (b.on_disconnect ?? 'cancel') === 'cancel', dropAfter: false });
  }

  @Post('runs/wait')
  async waitStateless(@Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.runs.createRun(null, body);
    await waitRun(this.agents, res, { threadId: null, run, cancelOnDisconnect: (b.on_disconnect ?? 'cancel') === 'cancel', dropAfter: (b.on_completion ?? 'delete') === 'delete' });
  }

  @Post('threads/:thread_id/runs/stream')
  async stream(@Param('thread_id') threadId: string, @Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.runs.createRun(threadId, body, { stream: true });
    const cancel = (b.on_disconnect ?? (b.stream_resumable ? 'continue' : 'cancel')) === 'cancel';
    await streamRun(this.agents, res, { threadId: run.thread_id, run, lastEventId: undefined, cancelOnDisconnect: cancel, created: true, dropAfter: false });
  }

  @Post('runs/stream')
  async streamStateless(@Body() body: unknown, @Res() res: Response): Promise<void> {
    const { run, body: b } = await this.agents.runs.createRun(null, body, { stream: true });
    const cancel = (b.on_disconnect ?? (b.stream_resumable ? 'continue' : 'cancel')) === 'cancel';
    await streamRun(this.agents, res, { threadId: null, run, lastEventId: undefined, cancelOnDisconnect: cancel, created: true, dropAfter: (b.on_completion ?? 'delete') === 'delete' });
  }

  @Get('threads/:thread_id/runs')
  list(@Param('thread_id') threadId: string, @Query() query: Record<string, unknown>): Promise<AgentRun[]> {
    const q = parseOrThrow(agentRunListQuerySchema, query, ['query']);
    return this.agents.runs.listRuns(threadId, q.limit, q.offset, q.status);
  }

  @Get('threads/:thread_id/runs/:run_id')
  get(@Param('thread_id') threadId: string, @Param('run_id') runId: string): Promise<AgentRun> {
    return this.agents.runs.getRun(threadId, runId);
  }

  @Get('threads/:thread_id/runs/:run_id/join')
  join(@Param('thread_id') threadId: string, @Param('run_id') runId: string): Promise<unknown> {
    return this.agents.runs.join(threadId, runId);
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
    const run = await this.agents.runs.requireRun(threadId, runId);
    await streamRun(this.agents, res, { threadId: run.thread_id, run, lastEventId, cancelOnDisconnect: q.cancel_on_disconnect, created: false, dropAfter: false });
  }

  @Get('runs/:run_id/stream')
  async joinStreamStateless(@Param('run_id') runId: string, @Headers('last-event-id') lastEventId: string | undefined, @Req() req: Request, @Res() res: Response): Promise<void> {
    const q = parseOrThrow(agentRunJoinStreamQuerySchema, req.query, ['query']);
    const run = await this.agents.runs.requireRun(null, pathId(runId, 'run_id'));
    await streamRun(this.agents, res, { threadId: null, run, lastEventId, cancelOnDisconnect: q.cancel_on_disconnect, created: false, dropAfter: false });
  }

  @Post('threads/:thread_id/runs/:run_id/cancel')
  async cancel(@Param('thread_id') threadId: string, @Param('run_id') runId: string, @Query() query: Record<string, unknown>, @Res() res: Response): Promise<void> {
    const q = parseOrThrow(agentRunCancelQuerySchema, query, ['query']);
    await this.agents.runs.cancelRun(threadId, runId, q.action, q.wait);
    res.status(q.wait ? 204 : 202).end();
  }

  @Delete('threads/:thread_id/runs/:run_id')
  @HttpCode(204)
  async remove(@Param('thread_id') threadId: string, @Param('run_id') runId: string): Promise<void> {
    await this.agents.runs.deleteRun(threadId, runId);
  }
}
