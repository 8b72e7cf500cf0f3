import { Logger } from '@nestjs/common';
import { close, closeSync, fdatasync, fsyncSync, ftruncate, mkdirSync, open, openSync, readdirSync, readFileSync, unlink, unlinkSync, write } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const openAsync = promisify(open);
const writeAsync = promisify(write);
const fdatasyncAsync = promisify(fdatasync);
const ftruncateAsync = promisify(ftruncate);
const closeAsync = promisify(close);
const unlinkAsync = promisify(unlink);

/** One message as the log keeps it: one JSON line. */
export interface LogRecord {
  topic: string;
  key: string;
  value: unknown;
  headers: Record<string, string>;
}

/**
 * A segment file of the log. Every record appended to it holds one reference until its consumer has
 * handled it; a drained segment is emptied (the active one) or removed (a sealed one).
 */
export class Segment {
  /** References still held: records not yet handled (times the groups they go to). */
  outstanding = 0;
  size = 0;
  sealed = false;
  constructor(
    readonly id: number,
    readonly path: string,
    public fd: number | null,
    private readonly log: DurableLog,
  ) {}
  hold(n: number): void {
    this.outstanding += n;
  }
  release(n = 1): void {
    this.outstanding -= n;
    if (this.outstanding === 0) this.log.drained(this);
  }
}

/** Segments grow to this size before a new one starts (a drained active segment is emptied instead). */
const SEGMENT_BYTES = 64 * 1024 * 1024;
const FILE = /^(\d{12})\.log$/;

/**
 * The standalone bus's write-ahead log: what Kafka is to the cluster form. Publishes append JSON lines
 * to the active segment and resolve once they are on disk (fdatasync; concurrent appends share one
 * write and one sync). Records stay until their consumer has handled them; at start the records of
 * the segments left behind are read back, so a kill -9 loses nothing that was acknowledged (consumers
 * see those records again, and must be idempotent, as they are with Kafka's redelivery).
 */
export class DurableLog {
  private readonly logger = new Logger('bus-log');
  private active: Segment | null = null;
  private nextId: number;
  private readonly waiting: { lines: string[]; done: (seg: Segment) => void; fail: (err: Error) => void }[] = [];
  /** The single chain of file operations: appends, empties and removals never overlap. */
  private io: Promise<void> = Promise.resolve();
  private flushing = false;
  private closed = false;

  private constructor(
    private readonly dir: string,
    lastId: number,
  ) {
    this.nextId = lastId + 1;
  }

  /** Opens the log in `dir`, returning it with the records of the segments a previous process left. */
  static open(dir: string): { log: DurableLog; recovered: { segment: Segment; records: LogRecord[] }[] } {
    mkdirSync(dir, { recursive: true });
    const ids = readdirSync(dir)
      .map((f) => FILE.exec(f)?.[1])
      .filter((m): m is string => m !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    const log = new DurableLog(dir, ids.length > 0 ? ids[ids.length - 1] : 0);
    const recovered: { segment: Segment; records: LogRecord[] }[] = [];
    for (const id of ids) {
      const path = log.pathOf(id);
      const records = parseSegment(readFileSync(path), (line, err) =>
        // Only the tail of a segment can be torn (records are synced before they are acknowledged): an
        // unreadable line was never acknowledged.
        log.logger.warn({ msg: 'unreadable log record skipped', segment: path, line, error: err }),
      );
      const segment = new Segment(id, path, null, log);
      segment.sealed = true;
      if (records.length === 0) {
        unlinkSync(path);
        continue;
      }
      segment.hold(records.length); // each record read back holds its segment, as an appended one does
      recovered.push({ segment, records });
    }
    return { log, recovered };
  }

  /** Appends records (encodeRecord's lines) and resolves with their segment once they are on disk. Each holds one reference. */
  append(lines: string[]): Promise<Segment> {
    if (this.closed) return Promise.reject(new Error('log is closed'));
    return new Promise<Segment>((done, fail) => {
      this.waiting.push({ lines, done, fail });
      if (!this.flushing) {
        this.flushing = true;
        // Appends made in the same turn share the write and the sync.
        setImmediate(() => this.enqueue(() => this.flush()));
      }
    });
  }

  /** Called when a segment's last reference is released. */
  drained(segment: Segment): void {
    this.enqueue(async () => {
      if (segment.outstanding !== 0) return; // appended to again since
      if (segment.sealed) {
        if (segment.fd !== null) await closeAsync(segment.fd);
        segment.fd = null;
        await unlinkAsync(segment.path);
      } else if (segment.fd !== null && segment.size > 0) {
        // Everything in it has been handled: start it over. Not synced: should the old records come
        // back after a crash, consumers see them again, which they tolerate.
        await ftruncateAsync(segment.fd, 0);
        segment.size = 0;
      }
    });
  }

  /** Waits for pending file operations, then closes the files (records not yet handled stay for the next start). */
  async close(): Promise<void> {
    this.closed = true;
    await this.io;
    if (this.active?.fd != null) {
      closeSync(this.active.fd);
      this.active.fd = null;
    }
  }

  private enqueue(op: () => Promise<void>): void {
    this.io = this.io.then(op).catch((err: unknown) => this.logger.error({ msg: 'log operation failed', error: String(err) }));
  }

  private async flush(): Promise<void> {
    const batch = this.waiting.splice(0);
    this.flushing = false;
    if (batch.length === 0) return;
    try {
      const segment = await this.writable();
      const data = Buffer.from(batch.map((b) => b.lines.join('\n') + '\n').join(''));
      let written = 0;
      while (written < data.length) {
        const { bytesWritten } = await writeAsync(segment.fd!, data, written, data.length - written, segment.size + written);
        written += bytesWritten;
      }
      await fdatasyncAsync(segment.fd!);
      segment.size += data.length;
      for (const b of batch) {
        segment.hold(b.lines.length);
        b.done(segment);
      }
      if (segment.size >= SEGMENT_BYTES) segment.sealed = true; // the next append starts a new segment
    } catch (err) {
      for (const b of batch) b.fail(err as Error);
    }
  }

  /** The active segment, or a new one (its name made durable: the directory is synced once). */
  private async writable(): Promise<Segment> {
    if (this.active && !this.active.sealed && this.active.fd !== null) return this.active;
    const id = this.nextId++;
    const path = this.pathOf(id);
    const fd = await openAsync(path, 'w');
    const dirFd = openSync(this.dir, 'r');
    try {
      fsyncSync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    this.active = new Segment(id, path, fd, this);
    return this.active;
  }

  private pathOf(id: number): string {
    return join(this.dir, `${String(id).padStart(12, '0')}.log`);
  }
}

/** A record as one line of the log (no newline inside: JSON escapes them). */
export function encodeRecord(r: LogRecord): string {
  return JSON.stringify({ t: r.topic, k: r.key, h: r.headers, v: r.value });
}

/** A line of the log back as its record; throws on anything else. */
export function decodeRecord(line: string): LogRecord {
  const r = JSON.parse(line) as { t?: unknown; k?: unknown; h?: unknown; v?: unknown };
  if (typeof r.t !== 'string' || typeof r.k !== 'string' || r.v === undefined) throw new Error('not a log record');
  return { topic: r.t, key: r.k, value: r.v, headers: (r.h as Record<string, string>) ?? {} };
}

/** The records of a segment file; unreadable lines (a torn tail) are reported and skipped. */
export function parseSegment(data: Buffer, onBad: (line: number, err: string) => void): LogRecord[] {
  const out: LogRecord[] = [];
  let start = 0;
  let line = 0;
  while (start < data.length) {
    let end = data.indexOf(10, start);
    if (end < 0) end = data.length;
    line++;
    if (end > start) {
      try {
        out.push(decodeRecord(data.toString('utf8', start, end)));
      } catch (err) {
        onBad(line, (err as Error).message);
      }
    }
    start = end + 1;
  }
  return out;
}
