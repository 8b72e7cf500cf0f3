import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { METRICS, onScrape } from '@th/platform';
import { ExportsRepository } from '../exports.repository';
import { EXPORT_WORKER_OPTIONS, type ExportWorkerOptions } from '../export-worker.options';
import { ExportInterrupted, ExportRunner } from './export-runner';

/**
 * The worker role: takes exports announced on the `exports` topic, and on every poll also takes due
 * exports nobody holds (new, spawned, or left by a worker that died: its lease expired), spawns due
 * windows of scheduled exports and times out exports past the runtime limit. A job is held by one
 * worker at a time through its lease in PostgreSQL.
 */
@Injectable()
export class ExportWorkerService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly log = new Logger('export-worker');
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void>; since: number }>();
  private removeScrapeHook: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopping = false;

  constructor(
    private readonly repo: ExportsRepository,
    private readonly runner: ExportRunner,
    @Inject(EXPORT_WORKER_OPTIONS) private readonly opts: ExportWorkerOptions,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!this.opts.worker) return;
    this.removeScrapeHook = onScrape(async () => {
      METRICS.exportRunning.set(this.running.size);
      METRICS.exportOldestRunAge.set(Math.max(0, ...[...this.running.values()].map((r) => (Date.now() - r.since) / 1000)));
    });
    this.timer = setInterval(() => void this.tick(), this.opts.pollMs);
    this.timer.unref();
    void this.tick();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.removeScrapeHook?.();
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const r of this.running.values()) r.abort.abort();
    await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Exports in flight in this process. */
  get active(): number {
    return this.running.size;
  }

  /** One scheduling pass; exported for tests that do not want to wait for the timer. */
  tick(): Promise<void> {
    if (this.ticking || this.stopping) return this.ticking ?? Promise.resolve();
    this.ticking = (async () => {
      try {
        await this.repo.timeOut(this.opts.maxRuntimeMs);
        const spawned = await this.repo.spawnDueWindows(new Date(), this.opts.spawnDelayMs, 50);
        for (const job of spawned) this.log.log(`spawned export ${job.id} for window ${job.window_index} of ${job.source_bulk_export_id}`);
        const free = this.opts.maxConcurrent - this.running.size;
        if (free > 0) for (const id of await this.repo.dueJobIds(free)) this.take(id);
      } catch (err) {
        this.log.error(`export scheduling pass failed: ${err instanceof Error ? err.message : String(err)}`);
      } finally {
        this.ticking = null;
      }
    })();
    return this.ticking;
  }

  /** Takes an export now (an announcement on the `exports` topic), unless it is held or there is no room. */
  take(id: string): void {
    if (this.stopping || this.running.has(id) || this.running.size >= this.opts.maxConcurrent) return;
    const abort = new AbortController();
    const entry = { abort, done: Promise.resolve(), since: Date.now() };
    this.running.set(id, entry);
    entry.done = this.runOne(id, abort.signal).finally(() => {
      this.running.delete(id);
      if (!this.stopping) setImmediate(() => void this.tick());
    });
  }

  private async runOne(id: string, signal: AbortSignal): Promise<void> {
    let job;
    try {
      job = await this.repo.claim(id, this.owner, this.opts.leaseMs);
    } catch (err) {
      this.log.error(`could not claim export ${id}: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (!job) return;
    METRICS.exportJobs.inc({ state: 'RUNNING' });
    const heartbeat = setInterval(() => void this.repo.heartbeat(id, this.owner, this.opts.leaseMs).catch(() => undefined), Math.max(1000, this.opts.leaseMs / 3));
    heartbeat.unref();
    try {
      await this.runner.run(job, this.owner, signal);
      await this.repo.finish(id, this.owner, 'COMPLETED', null);
      METRICS.exportJobs.inc({ state: 'COMPLETED' });
    } catch (err) {
      if (err instanceof ExportInterrupted || signal.aborted) {
        METRICS.exportJobs.inc({ state: 'INTERRUPTED' });
        if (signal.aborted) await this.repo.release(id, this.owner).catch(() => undefined);
        return;
      }
      const message = err instanceof Error ? err.message : String(err);
      // A failed attempt resumes from its last committed file after a back-off; the last allowed attempt fails the export.
      if (job.attempts < this.opts.maxAttempts) {
        this.log.warn(`export ${id} attempt ${job.attempts} failed, retrying: ${message}`);
        METRICS.exportJobs.inc({ state: 'RETRYING' });
        await this.repo.retryLater(id, this.owner, this.opts.retryDelayMs * job.attempts, message).catch(() => undefined);
      } else {
        this.log.error(`export ${id} failed after ${job.attempts} attempts: ${message}`);
        METRICS.exportJobs.inc({ state: 'FAILED' });
        await this.repo.finish(id, this.owner, 'FAILED', message).catch(() => undefined);
      }
    } finally {
      clearInterval(heartbeat);
    }
  }
}
