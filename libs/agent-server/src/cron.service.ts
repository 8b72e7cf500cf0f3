import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import {
  agentCronCountSchema,
  agentCronCreateSchema,
  agentCronSearchSchema,
  agentCronUpdateSchema,
  type AgentCron,
} from '@th/contracts';
import { ValidationFailed, notFound, parseOrThrow } from '@th/platform';
import { AgentService, isTerminal, pathId } from './agent.service';
import { CronScheduleError, nextCronTime, parseCronSchedule, type CronSchedule } from './cron-schedule';
import type { CronChanges, CronRepository, CronRow } from './cron.repository';

/** Crons one scheduler round takes at most; a full round is followed by another at once. */
export const CRON_BATCH = 100;

const defined = <T extends Record<string, unknown>>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;

/**
 * Crons (client.crons.*): a schedule (5 fields, UTC) and a run payload. At each firing the run is created
 * as POST /threads/{id}/runs (thread crons) or POST /runs (stateless crons, a new thread each time) would.
 */
export class CronService {
  private readonly logger = new Logger('agent-cron');
  /** Stateless firings waiting for their run to end, to drop its thread (on_run_completed "delete"). */
  private readonly cleanups = new Set<Promise<void>>();

  constructor(
    private readonly repo: CronRepository,
    private readonly agents: AgentService,
  ) {}

  /** POST /threads/{id}/runs/crons (threadId) and POST /runs/crons (null). Nothing is written unless all checks pass. */
  async createCron(threadId: string | null, body: unknown): Promise<AgentCron> {
    const tid = threadId === null ? null : pathId(threadId, 'thread_id');
    const b = parseOrThrow(agentCronCreateSchema, body ?? {}, ['body']);
    const schedule = this.parseSchedule(b.schedule);
    if (tid !== null && b.on_run_completed !== undefined) throw onlyStateless();
    const { schedule: _schedule, end_time, on_run_completed, enabled, ...run } = b;
    const { body: payload, assistant } = await this.agents.runs.checkRunBody(defined({ ...run, assistant_id: b.assistant_id }), ['body']);
    if (tid !== null) {
      if (b.if_not_exists === 'create') await this.agents.threads.createThread({ thread_id: tid, if_exists: 'do_nothing' });
      else await this.agents.threads.getThread(tid);
    }
    const created = await this.repo.createCron({
      cron_id: randomUUID(),
      assistant_id: assistant.assistant_id,
      thread_id: tid,
      schedule: b.schedule,
      payload: defined({ ...payload, assistant_id: assistant.assistant_id }),
      metadata: b.metadata ?? {},
      on_run_completed: tid === null ? (on_run_completed ?? 'delete') : null,
      enabled: enabled ?? true,
      end_time: end_time ?? null,
      next_run_date: nextCronTime(schedule, new Date())!,
    });
    if (!created) throw notFound(`Thread ${threadId}`);
    return created;
  }

  /** PATCH /runs/crons/{id}: a new schedule (or re-enabling) counts the next run from now. */
  async updateCron(id: string, body: unknown): Promise<AgentCron> {
    const cid = pathId(id, 'cron_id');
    const u = parseOrThrow(agentCronUpdateSchema, body ?? {}, ['body']);
    const schedule = u.schedule === undefined ? null : this.parseSchedule(u.schedule);
    const cron = await this.repo.getCron(cid);
    if (!cron) throw notFound(`Cron ${id}`);
    if (cron.thread_id !== null && u.on_run_completed !== undefined) throw onlyStateless();
    const { schedule: _schedule, end_time, on_run_completed, enabled, metadata, ...run } = u;
    const payload = defined(run);
    if (Object.keys(payload).length || metadata) {
      const merged = { ...cron.payload, ...payload, ...(metadata ? { metadata: { ...((cron.payload.metadata as Record<string, unknown>) ?? {}), ...metadata } } : {}) };
      await this.agents.runs.checkRunBody(merged, ['body']);
    }
    const reenabled = enabled === true && !cron.enabled;
    const changes: CronChanges = {
      schedule: u.schedule,
      next_run_date: schedule || reenabled ? nextCronTime(schedule ?? this.parseSchedule(cron.schedule), new Date())! : undefined,
      end_time,
      payload: Object.keys(payload).length ? payload : undefined,
      metadata,
      on_run_completed,
      enabled,
    };
    const updated = await this.repo.updateCron(cid, changes);
    if (!updated) throw notFound(`Cron ${id}`);
    return updated;
  }

  async deleteCron(id: string): Promise<void> {
    if (!(await this.repo.deleteCron(pathId(id, 'cron_id')))) throw notFound(`Cron ${id}`);
  }

  /** POST /runs/crons/search; with `select`, each cron carries only the fields named. */
  async searchCrons(body: unknown): Promise<Partial<AgentCron & { now: string }>[]> {
    const q = parseOrThrow(agentCronSearchSchema, body ?? {}, ['body']);
    const crons = await this.repo.searchCrons(q);
    if (!q.select) return crons;
    const now = new Date().toISOString();
    return crons.map((c) => Object.fromEntries(q.select!.map((f) => [f, f === 'now' ? now : c[f]])));
  }

  countCrons(body: unknown): Promise<number> {
    return this.repo.countCrons(parseOrThrow(agentCronCountSchema, body ?? {}, ['body']));
  }

  /**
   * One scheduler round: takes the crons due now (other processes skip them), moves each to its next
   * matching minute after now, then creates their runs. Answers how many were taken.
   */
  async fireDue(signal: AbortSignal): Promise<number> {
    const now = new Date();
    const due = await this.repo.claimDueCrons(CRON_BATCH, (c) => nextCronTime(parseCronSchedule(c.schedule), now)!);
    for (const cron of due) {
      if (signal.aborted) break;
      try {
        await this.fire(cron, signal);
      } catch (err) {
        // e.g. a busy thread under multitask_strategy "reject": this firing is skipped, the next one stands
        this.logger.warn({ msg: 'cron run not created', cron_id: cron.cron_id, error: (err as Error).message });
      }
    }
    return due.length;
  }

  /** Resolves once the stateless firings' threads waiting to be dropped are (the wait ends when `signal` aborts). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.cleanups]);
  }

  private async fire(cron: CronRow, signal: AbortSignal): Promise<void> {
    if (cron.thread_id !== null) {
      await this.agents.runs.createRun(cron.thread_id, cron.payload);
      return;
    }
    if (cron.on_run_completed === 'keep') {
      // a thread of its own, listed and kept like any other
      await this.agents.runs.createRun(randomUUID(), { ...cron.payload, if_not_exists: 'create' });
      return;
    }
    const { run } = await this.agents.runs.createRun(null, cron.payload);
    // Dropped once the run has ended, as a stateless wait does: by this process, so a thread whose run
    // outlives the process stays (hidden, like every stateless run's thread).
    const cleanup = this.agents.runs
      .waitForEnd(null, run.run_id, signal)
      .then(async (ended) => {
        if (ended && isTerminal(ended.status) && !signal.aborted) await this.agents.runs.dropTemporaryThread(ended);
      })
      .catch((err: Error) => this.logger.warn({ msg: 'cron run thread not dropped', cron_id: cron.cron_id, run_id: run.run_id, error: err.message }))
      .finally(() => this.cleanups.delete(cleanup));
    this.cleanups.add(cleanup);
  }

  private parseSchedule(expression: string): CronSchedule {
    try {
      return parseCronSchedule(expression);
    } catch (err) {
      if (err instanceof CronScheduleError) throw new ValidationFailed([{ loc: ['body', 'schedule'], msg: `Invalid cron schedule: ${err.message}`, type: 'value_error' }]);
      throw err;
    }
  }
}

const onlyStateless = () =>
  new ValidationFailed([{ loc: ['body', 'on_run_completed'], msg: 'on_run_completed applies to stateless crons only (POST /runs/crons)', type: 'value_error' }]);
