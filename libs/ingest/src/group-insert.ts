import { ClickHouse, RowBuffer } from '@th/clickhouse';
import { RUN_ROW_COLUMNS, RUN_ROW_INSERT_SETTINGS } from './run-row';

const MIN_BODY_BYTES = 64 * 1024;

/** One write's rows within a generation: its run lines are bytes [from, to) of the generation's body. */
interface Part {
  from: number;
  to: number;
  attachments: readonly string[];
  settle: (err?: Error) => void;
}

interface Generation {
  runs: RowBuffer;
  parts: Part[];
}

const generation = (bytes: number): Generation => ({ runs: new RowBuffer(bytes), parts: [] });

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
  private open: Generation = generation(MIN_BODY_BYTES);
  private writing = false;

  constructor(private readonly ch: ClickHouse) {}

  /**
   * Adds run rows (JSONCompactEachRow lines, RUN_ROW_COLUMNS) and attachment rows (JSONEachRow lines,
   * landing before the runs) to the next insert; resolves once they have landed, rejects if they could
   * not be written.
   */
  write(runLines: readonly string[], attachmentLines: readonly string[]): Promise<void> {
    // Nothing to write (a batch of pure redeliveries, say): nothing to wait for.
    if (runLines.length === 0 && attachmentLines.length === 0) return Promise.resolve();
    const gen = this.open;
    const from = gen.runs.body().length;
    for (const line of runLines) gen.runs.push(line);
    let settle!: (err?: Error) => void;
    const landed = new Promise<void>((resolve, reject) => {
      settle = (err) => (err ? reject(err) : resolve());
    });
    gen.parts.push({ from, to: gen.runs.body().length, attachments: attachmentLines, settle });
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
        const body = gen.runs.body();
        try {
          await this.insert(
            gen.parts.flatMap((p) => p.attachments),
            body,
          );
          for (const p of gen.parts) p.settle();
        } catch (err) {
          if (gen.parts.length === 1) gen.parts[0].settle(err as Error);
          else await this.insertEach(body, gen.parts);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Each write's rows on their own, after their combined insert failed. */
  private async insertEach(body: Buffer, parts: Part[]): Promise<void> {
    for (const p of parts) {
      try {
        // A part after the first starts with the newline that separates it from the previous one.
        await this.insert(p.attachments, body.subarray(p.from === 0 ? 0 : p.from + 1, p.to));
        p.settle();
      } catch (err) {
        p.settle(err as Error);
      }
    }
  }

  private async insert(attachments: readonly string[], runs: Buffer): Promise<void> {
    if (attachments.length > 0) await this.ch.insertJsonEachRow('run_attachments', Buffer.from(attachments.join('\n')));
    if (runs.length > 0) await this.ch.insertJsonCompactEachRow('runs', RUN_ROW_COLUMNS, runs, RUN_ROW_INSERT_SETTINGS);
  }
}
