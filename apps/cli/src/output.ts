/** Where a command writes: results on stdout, progress and errors on stderr. */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: NodeJS.ProcessEnv;
}

export type OutputMode = 'json' | 'table';

/** `--json` or `--table` when given; otherwise a table for a person at a terminal and JSON lines for a pipeline. */
export function outputMode(flags: { json?: boolean; table?: boolean }, io: Io): OutputMode {
  if (flags.json) return 'json';
  if (flags.table) return 'table';
  return io.stdout.isTTY ? 'table' : 'json';
}

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

const MAX_CELL = 60;

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
  const flat = s.replace(/\s+/g, ' ');
  return flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat;
}

/** Rows as JSON lines (every field) or as a table of the given columns. */
export function printRows<T>(io: Io, mode: OutputMode, rows: readonly T[], columns: Column<T>[]): void {
  if (mode === 'json') {
    for (const r of rows) io.stdout.write(`${JSON.stringify(r)}\n`);
    return;
  }
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i].length)));
  const line = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]))).join('  ').trimEnd();
  io.stdout.write(`${line(columns.map((c) => c.header.toUpperCase()))}\n`);
  for (const row of cells) io.stdout.write(`${line(row)}\n`);
  if (rows.length === 0) io.stderr.write('(none)\n');
}

/** One record: a JSON line, or `field  value` lines. */
export function printRecord(io: Io, mode: OutputMode, record: Record<string, unknown>): void {
  if (mode === 'json') {
    io.stdout.write(`${JSON.stringify(record)}\n`);
    return;
  }
  const width = Math.max(...Object.keys(record).map((k) => k.length));
  for (const [k, v] of Object.entries(record)) {
    const s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    io.stdout.write(`${k.padEnd(width)}  ${s}\n`);
  }
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Progress of something the CLI waits for, on stderr: at a terminal a spinner on one status line; elsewhere (CI logs)
 * one line per change of status, with the seconds since the start.
 */
export class Progress {
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private current = '';
  private lastPrinted = '';

  constructor(private readonly io: Io) {}

  private get tty(): boolean {
    return !!this.io.stderr.isTTY;
  }

  private elapsed(): string {
    return `${((Date.now() - this.started) / 1000).toFixed(1)}s`;
  }

  update(status: string, message = ''): void {
    const text = message ? `${status}: ${message.replace(/\s+/g, ' ').slice(0, 200)}` : status;
    this.current = text;
    if (this.tty) {
      this.timer ??= setInterval(() => this.draw(), 100);
      this.draw();
    } else if (text !== this.lastPrinted) {
      this.lastPrinted = text;
      this.io.stderr.write(`[${this.elapsed()}] ${text}\n`);
    }
  }

  private draw(): void {
    this.frame = (this.frame + 1) % FRAMES.length;
    this.io.stderr.write(`\r\x1b[K${FRAMES[this.frame]} ${this.current} (${this.elapsed()})`);
  }

  /** Ends the display, leaving the last status printed. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.tty && this.current) this.io.stderr.write(`\r\x1b[K${this.current} (${this.elapsed()})\n`);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
