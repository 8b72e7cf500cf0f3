import { METRICS } from '@th/platform';
import { ClickHouse, RowBinaryBuffer } from '@th/clickhouse';
import { RUN_ROW_COLUMNS } from './run-row';

const MIN_BODY_BYTES = 64 * 1024;
/**
 * Below this size an insert runs on one engine thread: the writer's bodies (1-5 MB) are one block
 * anyway, and spreading its pipeline over threads (measured with the earlier JSON bodies, whose
 * parallel parsing cost 3-4% of the CPU per run in bench/ingest) only handed the rows between them.
 */
const SMALL_BODY_BYTES = 10 * 1024 * 1024;
const SMALL_BODY_SETTINGS = { max_threads: 1 };
/** A body buffer larger than this is not kept for the next insert (a burst should not pin its memory). */
const MAX_SPARE_BYTES = 64 * 1024 * 1024;

/** How long rows may gather after an insert before the next one starts (see GroupInsertOptions). */
export interface GroupInsertOptions {
  /**
   * After an insert lands, the next one waits up to this long for more rows while its body is smaller
   * than lingerBytes. 0: the next insert starts at once with what is there.
   */
  lingerMs: number;
  /** A body this large goes at once, without lingering. */
  lingerBytes: number;
}

/**
 * Every insert costs the engine a fixed amount on top of its rows: in chDB some 10-17 ms of CPU
 * (query setup, a part for runs and one for runs_by_id through its view, later merges), against about
 * 10 µs per run row. Starting the next insert the moment the last one landed made them as small as
 * the rows that came in meanwhile (about 900 rows in bench/ingest); gathering 20 ms longer doubled
 * them, and the service spent about a tenth less CPU per run (113-154 µs against 149-191). A request that arrives while no insert runs is
 * written at once: only rows that come in under load wait.
 */
export const DEFAULT_GROUP_INSERT_OPTIONS: GroupInsertOptions = { lingerMs: 20, lingerBytes: 4 * 1024 * 1024 };

/** One write's rows within a generation: its run rows are bytes [from, to) of the generation's body. */
interface Part {
  from: number;
  to: number;
  attachments: readonly string[];
  settle: (err?: Error) => void;
}

interface Generation {
  runs: RowBinaryBuffer;
  parts: Part[];
}

const generation = (runs: RowBinaryBuffer): Generation => ({ runs, parts: [] });

/**
 * The writer's rows, written one insert at a time: rows of the batches that finish their merge while
 * an insert is under way go together in the next one. The inserts grow with the load instead of
 * running side by side (each a part of its own, and each slower for the others), and the cost the
 * engine pays per insert is shared by more rows.
 *
 * If the combined insert fails, each write's rows are inserted again on their own: a batch whose rows
 * the engine refuses fails alone, never the batches that happened to share its insert.
 */
export class GroupInsert {
  private open: Generation = generation(new RowBinaryBuffer(MIN_BODY_BYTES));
  private writing = false;
  /**
   * The body buffer of the last insert, emptied, for the one after next: two buffers take turns
   * instead of a new one per insert. Every buffer allocated counts towards V8's external memory, and
   * each 64 MB of it forces a garbage collection of the JS heap (a megabyte or two per insert was
   * most of the writer's).
   */
  private spare: RowBinaryBuffer | null = null;
  /** While an insert lingers: ends the wait early, once the open body reaches lingerBytes. */
  private wake: (() => void) | null = null;

  constructor(
    private readonly ch: ClickHouse,
    private readonly options: GroupInsertOptions = DEFAULT_GROUP_INSERT_OPTIONS,
  ) {}

  /**
   * Adds run rows and attachment rows (JSONEachRow lines, landing before the runs) to the next insert;
   * resolves once they have landed, rejects if they could not be written. `encode` writes the run
   * rows (RowBinary, RUN_ROW_COLUMNS) into the insert's body; if it throws, what it wrote is dropped
   * and the write fails alone.
   */
  write(encode: (rows: RowBinaryBuffer) => void, attachmentLines: readonly string[]): Promise<void> {
    const gen = this.open;
    const from = gen.runs.mark();
    try {
      encode(gen.runs);
    } catch (err) {
      gen.runs.rewind(from);
      return Promise.reject(err as Error);
    }
    const to = gen.runs.mark();
    // Nothing to write (a batch of pure redeliveries, say): nothing to wait for.
    if (to === from && attachmentLines.length === 0) return Promise.resolve();
    let settle!: (err?: Error) => void;
    const landed = new Promise<void>((resolve, reject) => {
      settle = (err) => (err ? reject(err) : resolve());
    });
    gen.parts.push({ from, to, attachments: attachmentLines, settle });
    if (!this.writing) void this.drain();
    else if (this.wake && to >= this.options.lingerBytes) this.wake();
    return landed;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      let first = true;
      while (this.open.parts.length > 0) {
        // The first insert goes at once; later ones (rows that came in under load) gather a little longer.
        if (!first) await this.linger();
        first = false;
        const gen = this.open;
        // A new buffer is sized for as much as this insert holds: the body seldom has to grow (and be copied) while it fills.
        this.open = generation(this.spare ?? new RowBinaryBuffer(Math.max(MIN_BODY_BYTES, Math.ceil(gen.runs.body().length * 1.25))));
        this.spare = null;
        const body = gen.runs.body();
        METRICS.writerInsertBytes.observe(body.length);
        const end = METRICS.writerInsertDuration.startTimer();
        try {
          await this.insert(
            gen.parts.flatMap((p) => p.attachments),
            body,
          );
          end({ outcome: 'ok' });
          for (const p of gen.parts) p.settle();
          // The engine has read the whole body once the insert succeeded: its buffer can be filled
          // again. After a failure it is dropped instead (an HTTP request that failed early may still
          // hold a view of it in its socket's queue).
          if (gen.runs.capacity <= MAX_SPARE_BYTES) {
            gen.runs.clear();
            this.spare = gen.runs;
          }
        } catch (err) {
          end({ outcome: 'error' });
          if (gen.parts.length === 1) gen.parts[0].settle(err as Error);
          else await this.insertEach(body, gen.parts);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Waits up to lingerMs for the open body to reach lingerBytes. */
  private async linger(): Promise<void> {
    const { lingerMs, lingerBytes } = this.options;
    if (lingerMs <= 0 || this.open.runs.mark() >= lingerBytes) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => this.wake?.(), lingerMs);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  /** Each write's rows on their own, after their combined insert failed. */
  private async insertEach(body: Buffer, parts: Part[]): Promise<void> {
    for (const p of parts) {
      try {
        await this.insert(p.attachments, body.subarray(p.from, p.to));
        p.settle();
      } catch (err) {
        p.settle(err as Error);
      }
    }
  }

  private async insert(attachments: readonly string[], runs: Buffer): Promise<void> {
    if (attachments.length > 0) await this.ch.insertJsonEachRow('run_attachments', Buffer.from(attachments.join('\n')));
    if (runs.length > 0) await this.ch.insertRowBinary('runs', RUN_ROW_COLUMNS, runs, runs.length < SMALL_BODY_BYTES ? SMALL_BODY_SETTINGS : {});
  }
}
