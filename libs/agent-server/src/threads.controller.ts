import { Body, Header, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Patch, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { parseBooleanWord, type AgentThread, type AgentThreadState } from '@th/contracts';
import { AgentService } from './agent.service';
import { streamThread } from './sse';
import { AGENT_SERVICE } from './agent-service.token';

@Controller('threads')
export class ThreadsController {
  constructor(@Inject(AGENT_SERVICE) private readonly agents: AgentService) {}

  @Post()
  @HttpCode(200)
  create(@Body() body: unknown): Promise<AgentThread> {
    return this.agents.threads.createThread(body);
  }

  @Post('count')
  @HttpCode(200)
  @Header('content-type', 'application/json; charset=utf-8') // a bare number, still JSON
  count(@Body() body: unknown): Promise<number> {
    return this.agents.threads.countThreads(body);
  }

  @Post('search')
  @HttpCode(200)
  search(@Body() body: unknown): Promise<AgentThread[]> {
    return this.agents.threads.searchThreads(body);
  }

  @Get(':thread_id')
  get(@Param('thread_id') id: string): Promise<AgentThread> {
    return this.agents.threads.getThread(id);
  }

  @Patch(':thread_id')
  patch(@Param('thread_id') id: string, @Body() body: unknown): Promise<AgentThread> {
    return this.agents.threads.patchThread(id, body);
  }

  @Delete(':thread_id')
  @HttpCode(204)
  async remove(@Param('thread_id') id: string): Promise<void> {
    await this.agents.threads.deleteThread(id);
  }

  @Get(':thread_id/state')
  state(@Param('thread_id') id: string, @Query('subgraphs') subgraphs?: string): Promise<AgentThreadState> {
    return this.agents.threads.getState(id, parseBooleanWord(subgraphs ?? '') === true);
  }

  @Patch(':thread_id/state')
  @HttpCode(204)
  async patchState(@Param('thread_id') id: string, @Body() body: unknown): Promise<void> {
    await this.agents.threads.patchState(id, body);
  }

  @Get(':thread_id/stream')
  async stream(@Param('thread_id') id: string, @Query() query: Record<string, unknown>, @Headers('last-event-id') lastEventId: string | undefined, @Res() res: Response): Promise<void> {
    await streamThread(this.agents, res, await this.agents.runs.openThreadStream(id, query, lastEventId));
  }

  @Post(':thread_id/copy')
  @HttpCode(200)
  copy(@Param('thread_id') id: string): Promise<AgentThread> {
    return this.agents.threads.copyThread(id);
  }

  @Post(':thread_id/state')
  @HttpCode(200)
  updateState(@Param('thread_id') id: string, @Body() body: unknown): Promise<{ checkpoint: AgentThreadState['checkpoint']; configurable: Record<string, unknown> }> {
    return this.agents.threads.updateState(id, body);
  }

  @Post(':thread_id/state/checkpoint')
  @HttpCode(200)
  stateAtCheckpoint(@Param('thread_id') id: string, @Body() body: unknown): Promise<AgentThreadState> {
    return this.agents.threads.getStateAtCheckpoint(id, body);
  }

  @Get(':thread_id/state/:checkpoint_id')
  stateAt(@Param('thread_id') id: string, @Param('checkpoint_id') checkpointId: string, @Query('subgraphs') subgraphs?: string): Promise<AgentThreadState> {
    return this.agents.threads.getStateAt(id, { checkpoint_id: checkpointId }, parseBooleanWord(subgraphs ?? '') === true);
  }

  @Post(':thread_id/history')
  @HttpCode(200)
  history(@Param('thread_id') id: string, @Body() body: unknown): Promise<AgentThreadState[]> {
    return this.agents.threads.getHistory(id, body);
  }

  @Get(':thread_id/history')
  historyGet(@Param('thread_id') id: string, @Query('limit') limit?: string): Promise<AgentThreadState[]> {
    return this.agents.threads.getHistory(id, limit === undefined ? {} : { limit });
  }
}
