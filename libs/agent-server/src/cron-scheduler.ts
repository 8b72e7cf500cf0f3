import { Logger } from '@nestjs/common';
import { CRON_BATCH, type CronService } from './cron.service';

/** Expired threads deleted per sweep call; a full batch means there may be more. */
export const THREAD_SWEEP_BATCH = 100;

/**
 * Fires due crons every `tickMs` in this process, and sweeps the threads whose ttl ran out. Several
 * processes may share one database: each round takes its crons with SKIP LOCKED, so a cron fires once
 * whichever process gets it.
 */
export class CronScheduler {
  private readonly logger = new Logger('agent-cron');
  private readonly abort = new AbortController();
  private timer: NodeJS.Timeout | null = null;
  private round: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly crons: CronService,
    private readonly tickMs: number,
    /** Deletes expired threads, at most a batch per call; returns how many. */
    private readonly sweepThreads: () => Promise<number> = async () => 0,
  ) {}

  start(): void {
    this.next();
  }

  private next(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.round = this.fire().finally(() => {
        this.round = null;
        this.next();
      });
    }, this.tickMs);
    this.timer.unref();
  }

  private async fire(): Promise<void> {
    try {
      while (!this.stopped && (await this.crons.fireDue(this.abort.signal)) === CRON_BATCH);
    } catch (err) {
      if (!this.stopped) this.logger.error({ msg: 'cron round failed', error: (err as Error).message });
    }
    try {
      while (!this.stopped && (await this.sweepThreads()) === THREAD_SWEEP_BATCH);
    } catch (err) {
      if (!this.stopped) this.logger.error({ msg: 'thread ttl sweep failed', error: (err as Error).message });
    }
  }

  /** Stops firing: lets a round under way finish, then ends the waits for stateless runs' threads. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.round;
    this.abort.abort();
    await this.crons.settle();
  }
}
