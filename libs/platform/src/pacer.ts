import { setImmediate as nextTurn } from 'node:timers/promises';

/** How long one request may hold the shared event loop before it gives way (ms). */
export const EVENT_LOOP_SLICE_MS = 10;

/**
 * Long loops over a request's items (multipart parts, runs of a batch) give the event loop way every
 * `sliceMs` of work, so other requests (and /ok) are served in between: `if (pacer.due()) await pacer.yield()`.
 */
export class EventLoopPacer {
  private sliceStart = performance.now();

  constructor(private readonly sliceMs = EVENT_LOOP_SLICE_MS) {}

  /** True when this slice of work has used its time. */
  due(): boolean {
    return performance.now() - this.sliceStart >= this.sliceMs;
  }

  /** Lets the event loop run what waits (I/O callbacks included), then starts a new slice. */
  async yield(): Promise<void> {
    await nextTurn();
    this.sliceStart = performance.now();
  }

  /** yield() when due; a resolved no-op otherwise. */
  async pace(): Promise<void> {
    if (this.due()) await this.yield();
  }
}

/** A pacer that counts how often it gave the event loop way (tests use it to check that long work yields). */
export class CountingPacer extends EventLoopPacer {
  yields = 0;

  override async yield(): Promise<void> {
    this.yields++;
    await super.yield();
  }
}
