import { ClickHouse, RowBuffer } from '@th/clickhouse';
import { RUN_ROW_COLUMNS, RUN_ROW_INSERT_SETTINGS } from './run-row';

const MIN_BODY_BYTES = 64 * 1024;

/** One commit's rows within a generation: its run lines are bytes [from, to) of the generation's body. */
interface Part {
  from: number;
  to: number;
  attachments: string[];
  settle: (err?: Error) => void;
}

interface Generation {
  runs: RowBuffer;
  /** Attachment lines pushed since the last commit (they go to the next part). */
  attachments: string[];
  parts: Part[];
  /** Where the next part's lines start in the body. */
  partStart: number;
}

const generation = (bytes: number): Generation => ({ runs: new RowBuffer(bytes), attachments: [], parts: [], partStart: 0 });

/**
 * The writer's rows, written one insert at a time: rows of the batches that finish their merge while
 * an insert is under way go together in the next one. The inserts grow with the load instead of
 * running side by side (each a part of its own, and each slower for the others), and the cost the
 * engine pays per insert is shared by more rows.
 *
 * If the combined insert fails, each commit's rows are inserted again on their own: a batch whose rows
 * the engine refuses fails alone, never the batches that happened to share its insert.
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

  /** Resolves once everything pushed since the last commit has landed; rejects if it could not be written. */
  commit(): Promise<void> {
    const gen = this.open;
    const to = gen.runs.body().length;
    // Nothing pushed (a batch of pure redeliveries, say): nothing to wait for.
    if (to === gen.partStart && gen.attachments.length === 0) return Promise.resolve();
    let settle!: (err?: Error) => void;
    const landed = new Promise<void>((resolve, reject) => {
      settle = (err) => (err ? reject(err) : resolve());
    });
    gen.parts.push({ from: gen.partStart, to, attachments: gen.attachments, settle });
    gen.partStart = to;
    gen.attachments = [];
    if (!this.writing) void this.drain();
    return landed;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.open.parts.length > 0) {
        const gen = this.open;
        // Sized for as much as the last insert held: the body seldom has to grow (and be copied) while it fills.
        this.open = generation(Math.max(MIN_BODY_BYTES, Math.ceil(gen.runs.body().length * 1.25)));
        // Pushed but not committed yet: carried over to the next generation.
        const body = gen.runs.body();
        const committed = gen.parts[gen.parts.length - 1].to;
        if (body.length > committed) {
          for (const line of body.subarray(committed === 0 ? 0 : committed + 1).toString('utf8').split('\n')) this.open.runs.push(line);
        }
        this.open.attachments = gen.attachments;
        try {
          await this.write(
            gen.parts.flatMap((p) => p.attachments),
            body.subarray(0, committed),
          );
          for (const p of gen.parts) p.settle();
        } catch (err) {
          if (gen.parts.length === 1) gen.parts[0].settle(err as Error);
          else await this.writeEach(body, gen.parts);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Each commit's rows on their own, after their combined insert failed. */
  private async writeEach(body: Buffer, parts: Part[]): Promise<void> {
    for (const p of parts) {
      try {
        // Lines after the first of the body start after the newline that separates them from the previous one.
        await this.write(p.attachments, body.subarray(p.from === 0 ? 0 : p.from + 1, p.to));
        p.settle();
      } catch (err) {
        p.settle(err as Error);
      }
    }
  }

  private async write(attachments: string[], runs: Buffer): Promise<void> {
    if (attachments.length > 0) await this.ch.insertJsonEachRow('run_attachments', Buffer.from(attachments.join('\n')));
    if (runs.length > 0) await this.ch.insertJsonCompactEachRow('runs', RUN_ROW_COLUMNS, runs, RUN_ROW_INSERT_SETTINGS);
  }
}
