import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Command } from '@langchain/langgraph';
import { METRICS, onScrape } from '@th/platform';
import type { AgentRunStatus, AgentThreadStatus } from '@th/contracts';
import type { DirectClaim, FinishOutcome, RunRow } from './agent.repository';
import type { AgentRepositories } from './agent-repositories';
import { CHANNELS } from './agent.repository';
import type { LoadedGraph } from './graph-registry';
import type { Notifier } from './notifier';
import { toWire } from './serialize';
import type { RunEndListener } from './webhook';

export interface WorkerOptions {
  concurrency: number;
  leaseSeconds: number;
  maxAttempts: number;
  durability: 'sync' | 'async' | 'exit';
  /** LangChain callbacks added to every run (the tracer to our tracing service), if configured. */
  callbacks: () => unknown[];
  /** Told which threads a run starts on without any checkpoint (it can skip reading the latest one). */
  checkpointer?: { markEmpty(threadId: string): void; forget(threadId: string): void; seal(runId: string): Promise<void> };
  /** Told of each run this worker (or its reaper) ended, once the end is committed (webhooks). */
  ended?: RunEndListener;
}

interface Active {
  run: RunRow;
  abort: AbortController;
  cancel: 'interrupt' | 'rollback' | null;
  lost: boolean;
  /** The committed row once this worker has ended the run. */
  ended: RunRow | null;
}

/** Stream modes the client may ask for, mapped to LangGraph's own. */
const GRAPH_MODE: Record<string, string | undefined> = {
  values: 'values',
  updates: 'updates',
  messages: 'messages',
  'messages-tuple': 'messages',
  custom: 'custom',
  debug: 'debug',
  tasks: 'tasks',
  checkpoints: 'checkpoints',
};

/** Writes a run's stream events in order, coalescing the ones produced while a write is in flight. */
class EventWriter {
  private seq = 0;
  private buffer: { seq: number; event: string; data: string }[] = [];
  private chain: Promise<void> = Promise.resolve();
  private failed: unknown = null;

  constructor(
    private readonly repo: AgentRepositories,
    private readonly runId: string,
  ) {}

  push(event: string, data: unknown): void {
    this.buffer.push({ seq: ++this.seq, event, data: JSON.stringify(data ?? null) });
    if (this.buffer.length === 1) {
      this.chain = this.chain.then(async () => {
        const batch = this.buffer;
        this.buffer = [];
        try {
          await this.repo.runs.appendEvents(this.runId, batch);
        } catch (err) {
          this.failed ??= err;
        }
      });
    }
  }

  async drain(): Promise<void> {
    await this.chain;
    if (this.failed) throw this.failed;
  }
}

/**
 * Executes queued runs: woken by NOTIFY, takes runs with row locks (SKIP LOCKED), holds a lease it
 * renews while the graph runs, and ends each run in one transaction. A worker that dies stops renewing;
 * the reaper of any process requeues its run (or fails it after the last attempt).
 */
export class RunWorker {
  private readonly logger = new Logger('agent-worker');
  readonly owner = `${process.pid}-${randomUUID()}`;
  private readonly active = new Map<string, Active>();
  private pumping = false;
  private again = false;
  /** Slots promised to runs being created by this process (see reserve). */
  private reserved = 0;
  /** A claim round found no free slot: runs may be waiting for one to free up. */
  private saturated = false;
  private stopped = false;
  private reaper: NodeJS.Timeout | null = null;
  private dueTimer: NodeJS.Timeout | null = null;
  private offs: (() => void)[] = [];

  constructor(
    private readonly repo: AgentRepositories,
    private readonly notifier: Notifier,
    private readonly graphs: Map<string, LoadedGraph>,
    private readonly opts: WorkerOptions,
  ) {}

  /** Takes runs when concurrency > 0; reaps lapsed leases in any case (a process that only serves HTTP still recovers runs). */
  start(): void {
    this.offs.push(this.notifier.on(CHANNELS.pending, () => this.pump()));
    this.offs.push(
      this.notifier.on(CHANNELS.cancel, (runId) => {
        if (runId === '*') for (const a of this.active.values()) void this.checkCancel(a);
        const a = this.active.get(runId);
        if (a) void this.checkCancel(a);
      }),
    );
    this.offs.push(onScrape(async () => METRICS.agentQueueDepth.set(await this.repo.queue.pendingCount())));
    this.reaper = setInterval(() => void this.reap(), Math.max(500, (this.opts.leaseSeconds * 1000) / 2));
    this.reaper.unref();
    void this.reap();
  }

  private async reap(): Promise<void> {
    try {
      const r = await this.repo.queue.reapExpired(this.opts.maxAttempts);
      if (r.requeued || r.failed.length) METRICS.agentLeaseReaps.inc(r.requeued + r.failed.length);
      if (r.requeued || r.failed.length) this.logger.warn({ msg: 'runs with lapsed leases', requeued: r.requeued, failed: r.failed.length });
      for (const run of r.failed) this.opts.ended?.runEnded(run);
    } catch (err) {
      if (!this.stopped) this.logger.error({ msg: 'reaper failed', error: (err as Error).message });
    }
    this.pump();
  }

  /**
   * A free slot for a run this process is creating, which it may then take at once (recorded as running
   * under this worker's lease in the same statement that creates it). Null when no slot is free. The
   * caller must call unreserve() once the create has returned, and adopt() the run if it was taken.
   */
  reserve(): DirectClaim | null {
    if (this.stopped || this.opts.concurrency - this.active.size - this.reserved <= 0) return null;
    this.reserved++;
    return { owner: this.owner, leaseSeconds: this.opts.leaseSeconds };
  }

  unreserve(): void {
    this.reserved--;
    if (this.saturated) this.pump();
  }

  /**
   * A run this worker is executing (its thread, and its committed row if it has just ended), else null.
   * Its end is published locally on the done channel (see Notifier.publishLocal), unless it is lost to
   * another worker or rolled back: then only the NOTIFY tells.
   */
  running(runId: string): { threadId: string; ended: RunRow | null } | null {
    const a = this.active.get(runId);
    return a && !a.lost ? { threadId: a.run.thread_id, ended: a.ended } : null;
  }

  /** Executes a run the creating statement gave to this worker (status running, its lease). */
  adopt(run: RunRow): void {
    if (this.stopped) {
      // shutting down meanwhile: back to the queue for another process
      void this.repo.queue.releaseRun(run, this.owner).catch(() => undefined);
      return;
    }
    this.execute(run);
  }

  /** Takes runs while slots are free. Re-entrant calls just ask for one more round. */
  pump(): void {
    if (this.stopped || this.opts.concurrency === 0) return;
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    void (async () => {
      try {
        do {
          this.again = false;
          for (;;) {
            const free = this.opts.concurrency - this.active.size - this.reserved;
            if (this.stopped) break;
            if (free <= 0) {
              this.saturated = true;
              break;
            }
            const want = Math.min(free, 50);
            const { runs, skipped, nextDue } = await this.repo.queue.claim(this.owner, want, this.opts.leaseSeconds);
            for (const run of runs) this.execute(run);
            this.scheduleDue(nextDue);
            if (runs.length < want) {
              // A runnable run whose row another transaction held (SKIP LOCKED passed it) gets no new
              // notification when that transaction ends without changes: look again shortly.
              if (skipped && this.active.size + this.reserved < this.opts.concurrency) this.retrySoon();
              break;
            }
          }
        } while (this.again && !this.stopped);
      } catch (err) {
        if (!this.stopped) this.logger.error({ msg: 'claim failed', error: (err as Error).message });
      } finally {
        this.pumping = false;
        // a wake-up that arrived after the last claim must not be lost
        if (this.again && !this.stopped) this.pump();
      }
    })();
  }

  private retryTimer: NodeJS.Timeout | null = null;

  private retrySoon(): void {
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.pump();
    }, 10);
    this.retryTimer.unref();
  }

  /** A run created with after_seconds becomes due later: wake up then. */
  private scheduleDue(at: Date | null): void {
    if (this.dueTimer) clearTimeout(this.dueTimer);
    this.dueTimer = null;
    if (!at || this.stopped) return;
    this.dueTimer = setTimeout(() => this.pump(), Math.max(0, at.getTime() - Date.now()) + 5);
    this.dueTimer.unref();
  }

  private async checkCancel(a: Active): Promise<void> {
    try {
      const action = await this.repo.queue.cancelActionOf(a.run.run_id);
      if (action && !a.cancel) {
        a.cancel = action;
        a.abort.abort(new Error(`run ${action === 'rollback' ? 'rolled back' : 'interrupted'}`));
      }
    } catch (err) {
      this.logger.warn({ msg: 'cancel check failed', error: (err as Error).message });
    }
  }

  private execute(run: RunRow): void {
    const a: Active = { run, abort: new AbortController(), cancel: null, lost: false, ended: null };
    this.active.set(run.run_id, a);
    // has_base: the thread had a checkpoint when the run was first taken (a retry has lost everything after it)
    if (!run.has_base) this.opts.checkpointer?.markEmpty(run.thread_id);
    const renew = setInterval(
      () => {
        this.repo.queue.renewLease(run.run_id, this.owner, run.attempt, this.opts.leaseSeconds).then(
          (r) => {
            if (!r) {
              a.lost = true;
              this.opts.checkpointer?.forget(run.thread_id);
              a.abort.abort(new Error('lease lost'));
            } else if (r.cancel_action && !a.cancel) {
              a.cancel = r.cancel_action;
              a.abort.abort(new Error('run cancelled'));
            }
          },
          (err: Error) => this.logger.warn({ msg: 'lease renewal failed', run_id: run.run_id, error: err.message }),
        );
      },
      Math.max(200, (this.opts.leaseSeconds * 1000) / 3),
    );
    if (run.cancel_action) {
      a.cancel = run.cancel_action;
      a.abort.abort(new Error('run cancelled'));
    }
    void this.run(a)
      .catch((err: Error) => this.logger.error({ msg: 'run bookkeeping failed', run_id: run.run_id, error: err.message }))
      .finally(() => {
        clearInterval(renew);
        this.active.delete(run.run_id);
        this.opts.checkpointer?.forget(run.thread_id);
        // A freed slot matters only if runs were left waiting for one; a thread's next queued run is
        // announced by the run's end (NOTIFY), which wakes the workers anyway.
        if (this.saturated) {
          this.saturated = false;
          this.pump();
        }
      });
  }

  private async run(a: Active): Promise<void> {
    const { run } = a;
    const started = performance.now();
    const writer = new EventWriter(this.repo, run.run_id);
    const loaded = this.graphs.get(run.graph_id);
    const kw = run.kwargs as {
      input?: unknown;
      command?: Record<string, unknown> | null;
      config?: { configurable?: Record<string, unknown>; tags?: string[]; recursion_limit?: number; [k: string]: unknown };
      context?: Record<string, unknown>;
      stream_mode?: string[];
      record_events?: boolean;
      stream_subgraphs?: boolean;
      interrupt_before?: string[] | '*';
      interrupt_after?: string[] | '*';
      durability?: 'sync' | 'async' | 'exit';
    };
    const requested = new Set(kw.stream_mode ?? ['values']);
    const modes = new Set<string>(['values', 'updates']);
    for (const m of requested) if (GRAPH_MODE[m]) modes.add(GRAPH_MODE[m]!);
    let values: unknown = undefined;
    const interrupts: Record<string, unknown> = {};
    let outcome: FinishOutcome | { status: 'rollback' };
    try {
      if (!loaded) throw new Error(`graph "${run.graph_id}" is not loaded in this server`);
      const input = kw.command ? new Command(kw.command as ConstructorParameters<typeof Command>[0]) : (kw.input ?? null);
      const { configurable, tags, recursion_limit, ...rest } = kw.config ?? {};
      const callbacks = this.opts.callbacks();
      const stream = await loaded.graph.stream(input, {
        ...rest,
        configurable: { ...configurable, thread_id: run.thread_id, run_id: run.run_id, assistant_id: run.assistant_id, graph_id: run.graph_id },
        context: kw.context,
        tags,
        recursionLimit: recursion_limit,
        metadata: { ...run.metadata, run_id: run.run_id, thread_id: run.thread_id, graph_id: run.graph_id, assistant_id: run.assistant_id },
        runId: run.run_id,
        streamMode: [...modes],
        subgraphs: kw.stream_subgraphs ?? false,
        interruptBefore: kw.interrupt_before,
        interruptAfter: kw.interrupt_after,
        durability: kw.durability ?? this.opts.durability,
        signal: a.abort.signal,
        // No callbacks at all rather than an empty list: LangChain then builds no callback manager, and
        // no run managers for the graph and each of its nodes (nothing would have listened to them).
        callbacks: callbacks.length ? callbacks : undefined,
      });
      for await (const chunk of stream) {
        let ns: string[] = [];
        let mode: string;
        let data: unknown;
        if (kw.stream_subgraphs) [ns, mode, data] = chunk as [string[], string, unknown];
        else [mode, data] = chunk as [string, unknown];
        if (ns.length === 0 && mode === 'values') values = data;
        if (ns.length === 0 && mode === 'updates' && data && typeof data === 'object' && '__interrupt__' in data) {
          interrupts[run.run_id] = toWire((data as { __interrupt__: unknown }).__interrupt__);
        }
        const wanted = (mode === 'messages' && (requested.has('messages') || requested.has('messages-tuple'))) || requested.has(mode);
        if (wanted && kw.record_events !== false) writer.push(ns.length ? `${mode}|${ns.join('|')}` : mode, toWire(data));
      }
      const wireValues = toWire(values);
      const interrupted = Object.keys(interrupts).length > 0;
      outcome = { status: 'success', threadStatus: interrupted ? 'interrupted' : 'idle', result: wireValues ?? {}, error: null, values: wireValues, interrupts };
    } catch (err) {
      if (a.lost) return; // another worker owns the run now; write nothing
      if (a.cancel === 'rollback') {
        outcome = { status: 'rollback' };
      } else if (a.cancel === 'interrupt') {
        const partial = toWire(values);
        outcome = { status: 'interrupted', threadStatus: 'idle', result: partial ?? {}, error: null, values: partial, interrupts };
      } else {
        const e = err as Error;
        const error = { error: e?.name ?? 'Error', message: e?.message ?? String(err) };
        if (kw.record_events !== false) writer.push('error', error);
        const status: AgentRunStatus = e?.name === 'GraphRecursionError' ? 'error' : 'error';
        const threadStatus: AgentThreadStatus = 'error';
        outcome = { status, threadStatus, result: null, error, values: undefined, interrupts };
      }
    }
    await writer.drain().catch((err: Error) => this.logger.error({ msg: 'run events not written', run_id: run.run_id, error: err.message }));
    // The stream rejected at the cancel, but the graph may still be writing its last checkpoint: keep it
    // from landing after the rollback has deleted the run's checkpoints.
    if (outcome.status === 'rollback') await this.opts.checkpointer?.seal(run.run_id);
    const { done, ended } = await this.repo.queue.finishRun(run, this.owner, outcome);
    // Waiters in this process get the committed row at once; the NOTIFY tells every process.
    if (ended) {
      METRICS.agentRuns.inc({ status: ended.status });
      METRICS.agentRunDuration.observe({ status: ended.status }, (performance.now() - started) / 1000);
      a.ended = ended;
      this.notifier.publishLocal(CHANNELS.done, run.run_id, ended);
      this.opts.ended?.runEnded(ended);
    }
    if (done && outcome.status === 'rollback' && loaded) {
      // The thread's values are whatever the checkpoints left by earlier runs say.
      const state = await loaded.graph.getState({ configurable: { thread_id: run.thread_id } });
      await this.repo.threads.setThreadValues(run.thread_id, toWire(state.values) ?? {});
    }
  }

  /** Stops taking runs; lets running ones finish for up to `graceMs`, then hands them back to the queue. */
  async stop(graceMs: number): Promise<void> {
    this.stopped = true;
    for (const off of this.offs) off();
    if (this.reaper) clearInterval(this.reaper);
    if (this.dueTimer) clearTimeout(this.dueTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const deadline = Date.now() + graceMs;
    while (this.active.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    for (const a of [...this.active.values()]) {
      a.lost = true;
      a.abort.abort(new Error('server shutting down'));
      await this.repo.queue.releaseRun(a.run, this.owner).catch(() => undefined);
    }
  }
}
