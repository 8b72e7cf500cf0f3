import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { agentRunBatchSchema, agentThreadEventIdSchema, agentThreadStreamQuerySchema, agentRunCreateSchema, type AgentAssistant, type AgentRun, type AgentRunStatus, type ValidationErrorItem } from '@th/contracts';
import { OutboundPolicy, OutboundRefused, ValidationFailed, conflict, notFound, parseOrThrow, toValidationErrors } from '@th/platform';
import type { z } from 'zod';
import { CHANNELS, toRun, type CreateRunOptions, type NewRun, type RunRow, type ThreadRun, type ThreadRunPosition } from './agent.repository';
import type { AgentRepositories } from './agent-repositories';
import type { RunsRepository } from './runs.repository';
import type { CompiledGraphLike, LoadedGraph } from './graph-registry';
import type { Notifier } from './notifier';
import type { RunEndListener } from './webhook';
import { isTerminal, pathId, type StreamEvent, type ThreadStreamEvent, type ThreadStreamCursor, type ZodLike, type RunExecutor, snakeKeys } from './agent-helpers';
import { AssistantsService } from './assistants.service';
import { ThreadsService } from './threads.service';

/** Runs: creation under the multitask strategy, waiting, joining, cancelling, and the run and thread streams. */
export class RunsService {
  private readonly logger = new Logger('agent-server');

  constructor(
    private readonly repo: AgentRepositories,
    private readonly notifier: Notifier,
    private readonly graphs: Map<string, LoadedGraph>,
    private readonly assistants: AssistantsService,
    private readonly threads: ThreadsService,
    private readonly executor: RunExecutor | null = null,
    /** Told of the runs this service ends itself (pending runs interrupted), once committed. */
    private readonly ended: RunEndListener | null = null,
    /** Where run webhooks may point (public addresses, or what the operator's allow-list names). */
    private readonly outbound: OutboundPolicy,
  ) {}

  /**
   * Creates a run on a thread (or, threadId null, on a fresh stateless thread). Validation, the
   * assistant and the input schema are checked before anything is written.
   */
  async createRun(threadId: string | null, body: unknown, opts: { stream: boolean } = { stream: false }): Promise<{ run: RunRow; body: z.infer<typeof agentRunCreateSchema> }> {
    const tid = threadId === null ? null : pathId(threadId, 'thread_id');
    const b = parseOrThrow(agentRunCreateSchema, body ?? {}, ['body']);
    const prepared = await this.prepareRun(tid, b, opts, ['body']);
    // A slot of this process's worker, so that the run can be taken in the statement that records it
    // (no NOTIFY and claim round trip) when its thread is idle.
    const direct = this.executor?.reserve() ?? null;
    let outcome: Awaited<ReturnType<RunsRepository['createRun']>>;
    try {
      outcome = await this.repo.runs.createRun(prepared.run, prepared.opts, direct);
    } finally {
      if (direct) this.executor?.unreserve();
    }
    if (direct && outcome.kind === 'created' && outcome.run.status === 'running' && outcome.run.lease_owner === direct.owner) this.executor?.adopt(outcome.run);
    if (outcome.kind === 'thread_missing') throw notFound(`Thread ${threadId}`);
    if (outcome.kind === 'busy') throw conflict('Thread is busy with another run; multitask_strategy "reject" refused this one');
    for (const r of outcome.ended) this.ended?.runEnded(r);
    return { run: outcome.run, body: b };
  }

  /**
   * Checks a run body as createRun does (422 at `loc`, 404 for the assistant or its graph, the graph's input
   * schema) without writing anything: a cron's payload, checked when the cron is created or changed.
   */
  async checkRunBody(body: unknown, loc: (string | number)[]): Promise<{ body: z.infer<typeof agentRunCreateSchema>; assistant: AgentAssistant }> {
    const b = parseOrThrow(agentRunCreateSchema, body ?? {}, loc);
    await this.prepareRun(null, b, { stream: false }, loc);
    return { body: b, assistant: await this.assistants.resolveAssistant(b.assistant_id) };
  }

  /**
   * POST /runs/batch: stateless background runs, all validated (422 at ["body", i, ...]) and their
   * assistants resolved (404) before any is written, then created in one transaction.
   */
  async createBatch(body: unknown): Promise<AgentRun[]> {
    const items = parseOrThrow(agentRunBatchSchema, body, ['body']);
    const parsed = items.map((item, i) => parseOrThrow(agentRunCreateSchema, snakeKeys(item), ['body', i]));
    const prepared: { run: NewRun; opts: CreateRunOptions }[] = [];
    for (const [i, b] of parsed.entries()) prepared.push(await this.prepareRun(null, b, { stream: false }, ['body', i]));
    const outcomes = await this.repo.runs.createRuns(prepared);
    return outcomes.map((o) => {
      if (o.kind !== 'created') throw new Error(`a stateless run could not be created (${o.kind})`);
      return toRun(o.run);
    });
  }

  private async prepareRun(
    tid: string | null,
    b: z.infer<typeof agentRunCreateSchema>,
    opts: { stream: boolean },
    loc: (string | number)[],
  ): Promise<{ run: NewRun; opts: CreateRunOptions }> {
    if (b.webhook) await this.checkWebhook(b.webhook, [...loc, 'webhook']);
    const assistant = await this.assistants.resolveAssistant(b.assistant_id);
    const loaded = this.graphs.get(assistant.graph_id);
    if (!loaded) throw notFound(`Graph ${assistant.graph_id}`);
    if (b.input) this.checkInput(loaded.graph, b.input, loc);
    const streamMode = b.stream_mode === undefined ? ['values'] : Array.isArray(b.stream_mode) ? b.stream_mode : [b.stream_mode];
    // Events are kept for replay only when someone asked to stream; a plain run's stream is its final values.
    const recordEvents = opts.stream || b.stream_mode !== undefined || b.stream_resumable === true;
    const kwargs = {
      input: b.input ?? null,
      command: b.command ?? null,
      config: {
        ...assistant.config,
        ...b.config,
        configurable: { ...(assistant.config.configurable ?? {}), ...(b.config?.configurable ?? {}) },
      },
      context: { ...assistant.context, ...(b.context ?? {}) },
      stream_mode: streamMode,
      record_events: recordEvents,
      stream_subgraphs: b.stream_subgraphs ?? false,
      stream_resumable: b.stream_resumable ?? false,
      interrupt_before: b.interrupt_before,
      interrupt_after: b.interrupt_after,
      durability: b.durability,
      webhook: b.webhook,
      temporary: tid === null,
    };
    return {
      run: {
        run_id: randomUUID(),
        thread_id: tid ?? randomUUID(),
        assistant_id: assistant.assistant_id,
        graph_id: assistant.graph_id,
        metadata: b.metadata ?? {},
        kwargs,
        multitask_strategy: b.multitask_strategy ?? 'enqueue',
        after_seconds: b.after_seconds ?? 0,
      },
      opts: { createThread: tid === null || b.if_not_exists === 'create', stateless: tid === null, threadMetadata: {} },
    };
  }

  /** A webhook must point where this server may call (422 otherwise); delivery checks the address it connects to again. */
  private async checkWebhook(url: string, loc: (string | number)[]): Promise<void> {
    try {
      await this.outbound.check(url);
    } catch (err) {
      if (err instanceof OutboundRefused) throw new ValidationFailed([{ loc, msg: `webhook ${err.message}`, type: 'value_error' }]);
      throw err;
    }
  }

  /** Refuses input the graph's input schema would refuse (422, nothing written). */
  private checkInput(graph: CompiledGraphLike, input: Record<string, unknown>, loc: (string | number)[]): void {
    const builder = graph.builder;
    const runtime = builder?._inputRuntimeDefinition as ZodLike | symbol | undefined;
    const schemaRt = (builder as { _schemaRuntimeDefinition?: ZodLike } | undefined)?._schemaRuntimeDefinition;
    const zod = runtime && typeof runtime === 'object' && typeof runtime.safeParse === 'function' ? runtime : typeof schemaRt?.partial === 'function' ? schemaRt.partial() : null;
    if (zod) {
      const r = zod.safeParse(input);
      if (!r.success && r.error) throw new ValidationFailed(toValidationErrors(r.error, [...loc, 'input']));
    }
    const def = builder?._inputDefinition;
    if (def && typeof def === 'object' && !('safeParse' in def)) {
      const known = new Set(Object.keys(def));
      const extra: ValidationErrorItem[] = Object.keys(input)
        .filter((k) => !known.has(k))
        .map((k) => ({ loc: [...loc, 'input', k], msg: `"${k}" is not a field of the graph's input (${[...known].join(', ')})`, type: 'extra_forbidden' }));
      if (extra.length) throw new ValidationFailed(extra);
    }
  }

  async getRun(threadId: string, runId: string): Promise<AgentRun> {
    const r = await this.repo.runs.getRun(pathId(threadId, 'thread_id'), pathId(runId, 'run_id'));
    if (!r) throw notFound(`Run ${runId}`);
    return toRun(r);
  }

  async listRuns(threadId: string, limit: number, offset: number, status?: AgentRunStatus): Promise<AgentRun[]> {
    const tid = pathId(threadId, 'thread_id');
    const t = await this.repo.threads.getThreadRow(tid);
    if (!t) throw notFound(`Thread ${threadId}`);
    return (await this.repo.runs.listRuns(tid, limit, offset, status)).map(toRun);
  }

  async cancelRun(threadId: string, runId: string, action: 'interrupt' | 'rollback', wait: boolean): Promise<void> {
    const tid = pathId(threadId, 'thread_id');
    const rid = pathId(runId, 'run_id');
    const r = await this.cancelAndReport(tid, rid, action);
    if (r === 'absent') throw notFound(`Run ${runId}`);
    if (wait && r === 'signalled') await this.waitForEnd(tid, rid);
  }

  /** Cancels a run; a pending run it interrupts has ended here, and is reported (a running one is ended by its worker). */
  private async cancelAndReport(threadId: string, runId: string, action: 'interrupt' | 'rollback'): ReturnType<RunsRepository['cancelRun']> {
    const r = await this.repo.runs.cancelRun(threadId, runId, action);
    const ended = this.ended;
    if (r === 'done' && action === 'interrupt' && ended) {
      // read after the cancel is committed, and in the background: reporting never fails the cancel
      void this.repo.runs.getRun(threadId, runId).then(
        (run) => run && isTerminal(run.status) && ended.runEnded(run),
        (err: Error) => this.logger.warn({ msg: 'cancelled run not reported', run_id: runId, error: err.message }),
      );
    }
    return r;
  }

  async deleteRun(threadId: string, runId: string): Promise<void> {
    const r = await this.repo.runs.deleteRun(pathId(threadId, 'thread_id'), pathId(runId, 'run_id'));
    if (r === 'absent') throw notFound(`Run ${runId}`);
    if (r === 'active') throw conflict(`Run ${runId} is still pending or running; cancel it first`);
  }

  /**
   * Resolves when the run has ended (by its NOTIFY, or at once when this process ended it; never a
   * timer); null when it no longer exists.
   */
  async waitForEnd(threadId: string | null, runId: string, signal?: AbortSignal): Promise<RunRow | null> {
    for (let first = true; ; first = false) {
      const sub = this.notifier.next(CHANNELS.done, runId, signal);
      // A run executing in this process needs no read: its end comes with its committed row.
      const local = first ? this.executor?.running(runId) : null;
      if (local && (threadId === null || local.threadId === threadId) && !signal?.aborted) {
        if (local.ended) {
          sub.cancel();
          return local.ended;
        }
        const ended = (await sub.promise) as RunRow | undefined;
        if (ended && isTerminal(ended.status)) return ended;
        continue;
      }
      const run = await this.repo.runs.getRun(threadId, runId);
      if (!run || isTerminal(run.status) || signal?.aborted) {
        sub.cancel();
        return run;
      }
      const ended = (await sub.promise) as RunRow | undefined;
      // the committed row of a run this process ended (same run: the thread is checked too when given)
      if (ended && isTerminal(ended.status) && (threadId === null || ended.thread_id === threadId)) return ended;
    }
  }

  /** The body join and wait answer with: the final values, or {__error__} for a failed run. */
  static finalBody(run: RunRow | null): unknown {
    if (!run) return { __error__: { error: 'RunDeleted', message: 'The run was deleted (rolled back) before it ended' } };
    if (run.status === 'error' || run.status === 'timeout') return { __error__: run.error ?? { error: 'Error', message: `run ended as ${run.status}` } };
    return run.result ?? {};
  }

  /** The single event that stands for the stream of a run that kept no events: its final values, or its error. */
  static endEvent(run: RunRow): { event: string; data: string } {
    const body = RunsService.finalBody(run) as { __error__?: unknown };
    return body.__error__ ? { event: 'error', data: JSON.stringify(body.__error__) } : { event: 'values', data: JSON.stringify(body) };
  }

  async join(threadId: string, runId: string): Promise<unknown> {
    const tid = pathId(threadId, 'thread_id');
    const rid = pathId(runId, 'run_id');
    // absent at first or deleted while waiting: 404 either way
    const run = await this.waitForEnd(tid, rid);
    if (!run) throw notFound(`Run ${runId}`);
    return RunsService.finalBody(run);
  }

  async requireRun(threadId: string | null, runId: string): Promise<RunRow> {
    const r = await this.repo.runs.getRun(threadId === null ? null : pathId(threadId, 'thread_id'), pathId(runId, 'run_id'));
    if (!r) throw notFound(`Run ${runId}`);
    return r;
  }

  /** A run's stream events after `afterSeq`, live until the run ends: replayable from the database by any process. */
  async *events(threadId: string | null, runId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    let last = afterSeq;
    for (;;) {
      const ev = this.notifier.next(CHANNELS.events, runId, signal);
      const done = this.notifier.next(CHANNELS.done, runId, signal);
      try {
        const run = await this.repo.runs.getRun(threadId, runId);
        const rows = await this.repo.runs.readEvents(runId, last);
        for (const r of rows) {
          last = r.seq;
          yield r;
        }
        if (rows.length === 1000) continue;
        if (!run || isTerminal(run.status) || signal.aborted) return;
        await Promise.race([ev.promise, done.promise]);
      } finally {
        ev.cancel();
        done.cancel();
      }
    }
  }

  /**
   * Checks a thread stream request before the stream opens: the thread (404), the stream mode and the
   * Last-Event-ID (422).
   */
  async openThreadStream(threadId: string, query: unknown, lastEventId: string | undefined): Promise<{ threadId: string; after: ThreadStreamCursor | null }> {
    parseOrThrow(agentThreadStreamQuerySchema, query ?? {}, ['query']);
    const after = lastEventId === undefined ? null : parseOrThrow(agentThreadEventIdSchema, lastEventId, ['header', 'last-event-id']);
    const thread = await this.threads.getThread(threadId);
    return { threadId: thread.thread_id, after };
  }

  /**
   * A thread's run events, run after run, until `signal` aborts (or the thread is deleted): from the run
   * running or next to run when the stream opens (else from the next run created), or resumed after an
   * event. A run whose events were not kept gives its end state (as its own stream does).
   */
  async *threadEvents(threadId: string, after: ThreadStreamCursor | null, signal: AbortSignal): AsyncGenerator<ThreadStreamEvent> {
    // Subscribed before anything is read, so that a run started meanwhile is not missed. Every run that
    // starts writes an event or ends, each notified with its id; an id looked up once wakes it no more.
    const looked = new Set<string>();
    let dirty = false;
    let wake: (() => void) | null = null;
    const poke = (runId: string) => {
      if (looked.has(runId)) return;
      if (looked.size >= 10_000) looked.clear();
      if (runId !== '*') looked.add(runId);
      dirty = true;
      wake?.();
    };
    const offs = [this.notifier.on(CHANNELS.events, poke), this.notifier.on(CHANNELS.done, poke)];
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const resumed = after ? await this.repo.runs.threadRun(threadId, after.run_id) : null;
      // A Last-Event-ID of a run that is gone (rolled back, deleted) restarts as a new stream would. The
      // newest run is read before the active one: a run created in between is then found either way.
      let position: ThreadRunPosition | null = resumed ? null : await this.repo.runs.latestThreadRunPosition(threadId);
      let current: ThreadRun | null = resumed ?? (await this.repo.runs.firstActiveThreadRun(threadId));
      let from = resumed && after ? after.seq : 0;
      for (;;) {
        if (current) {
          yield* this.threadRunEvents(threadId, current.run, from, signal);
          position = current.position;
          current = null;
          from = 0;
        }
        if (signal.aborted) return;
        dirty = false;
        const next = await this.repo.runs.nextThreadRun(threadId, position);
        if (!next) return;
        current = next.run;
        if (current || dirty) continue;
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (signal.aborted) resolve();
        });
        wake = null;
      }
    } finally {
      for (const off of offs) off();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** One run's part of a thread stream: its metadata (event 0), then its events after `after`. */
  private async *threadRunEvents(threadId: string, run: RunRow, after: number, signal: AbortSignal): AsyncGenerator<ThreadStreamEvent> {
    const id = (seq: number) => `${run.run_id}:${seq}`;
    if (after === 0) yield { id: id(0), event: 'metadata', data: JSON.stringify({ run_id: run.run_id, attempt: run.attempt || 1 }) };
    for await (const e of this.events(threadId, run.run_id, after, signal)) yield { id: id(e.seq), event: e.event, data: e.data };
    if (signal.aborted || (run.kwargs as { record_events?: boolean }).record_events !== false || after > 0) return;
    const ended = await this.waitForEnd(threadId, run.run_id, signal);
    // event 1 of a run that kept none: resuming after it does not give it again
    if (ended && !signal.aborted) yield { id: id(1), ...RunsService.endEvent(ended) };
  }

  /** Removes the temporary thread of a stateless run once its caller has the result. */
  async dropTemporaryThread(run: RunRow): Promise<void> {
    if ((run.kwargs as { temporary?: boolean }).temporary) await this.repo.threads.deleteThread(run.thread_id);
  }

  async cancelQuietly(threadId: string, runId: string): Promise<void> {
    await this.cancelAndReport(threadId, runId, 'interrupt').catch(() => undefined);
  }
}
