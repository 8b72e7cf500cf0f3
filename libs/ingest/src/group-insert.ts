import { ClickHouse, RowBuffer } from '@th/clickhouse';
import { RUN_ROW_COLUMNS, RUN_ROW_INSERT_SETTINGS } from './run-row';

const MIN_BODY_BYTES = 64 * 1024;

interface Generation {
  runs: RowBuffer;
  attachments: string[];
  /** Settled once this generation's rows have landed (or failed to). */
  landed: Promise<void>;
  settle: (err?: Error) => void;
}

function generation(bytes: number): Generation {
  let settle!: (err?: Error) => void;
  const landed = new Promise<void>((resolve, reject) => {
    settle = (err) => (err ? reject(err) : resolve());
  });
  landed.catch(() => undefined); // each committer awaits it; a generation nobody awaited must not go unhandled
  return { runs: new RowBuffer(bytes), attachments: [], landed, settle };
}

/**
 * The writer's rows, written one insert at a time: rows of the batches that finish their merge while
 * an insert is under way go together in the next one. The inserts grow with the load instead of
 * running side by side (each a part of its own, and each slower for the others), and the cost the
 * engine pays per insert is shared by more rows.
 */
export class GroupInsert {
  private open: Generation = generation(MIN_BODY_BYTES);
  private writing = false;

  constructor(private readonly ch: ClickHouse) {}

  /** Adds a run row (JSONCompactEachRow line, RUN_ROW_COLUMNS) to the next insert. */
  pushRun(line: string): void {
    this.open.runs.push(line);
  }

  /** Adds an attachment row (JSONEachRow line) to the next insert; attachments land before their runs. */
  pushAttachment(line: string): void {
    this.open.attachments.push(line);
  }

  /** Resolves once everything pushed so far has landed; rejects if its insert failed. */
  commit(): Promise<void> {
    const gen = this.open;
    // Nothing pushed (a batch of pure redeliveries, say): nothing to wait for.
    if (gen.runs.count === 0 && gen.attachments.length === 0) return Promise.resolve();
    if (!this.writing) void this.drain();
    return gen.landed;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.open.runs.count > 0 || this.open.attachments.length > 0) {
        const gen = this.open;
        // Sized for as much as the last insert held: the body seldom has to grow (and be copied) while it fills.
        this.open = generation(Math.max(MIN_BODY_BYTES, Math.ceil(gen.runs.body().length * 1.25)));
        try {
          if (gen.attachments.length > 0) await this.ch.insertJsonEachRow('run_attachments', Buffer.from(gen.attachments.join('\n')));
          if (gen.runs.count > 0) await this.ch.insertJsonCompactEachRow('runs', RUN_ROW_COLUMNS, gen.runs.body(), RUN_ROW_INSERT_SETTINGS);
          gen.settle();
        } catch (err) {
          gen.settle(err as Error);
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
