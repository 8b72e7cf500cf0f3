import type { ClickHouse } from '@th/clickhouse';
import { RUNS_BY_ID } from '@th/clickhouse';

/** Milliseconds since the epoch in a UUIDv7 (its first 48 bits), or null for any other kind of id. */
export function uuidv7Millis(id: string): number | null {
  if (id.length !== 36 || id.charCodeAt(14) !== 0x37 /* '7' */) return null;
  const ms = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
  return Number.isFinite(ms) ? ms : null;
}

/**
 * Tells the writer which runs cannot have a stored row yet, so it merges them from nothing instead of
 * asking ClickHouse (a lookup that, under load, mostly finds nothing: most events are a new run's POST).
 *
 * Sound only where this writer is the only one that writes runs (standalone: the engine's directory
 * belongs to one process). It rests on two facts:
 * - the floor: the highest UUIDv7 time among stored ids, read once at start. No stored UUIDv7 id is
 *   newer than that, so a newer id was either written by this writer since, or never;
 * - every run this writer writes is noted (before its insert starts) while its id is newer than the floor.
 *
 * So a UUIDv7 id newer than the floor and not noted cannot be stored. Every other id (not a UUIDv7,
 * older than the floor, noted, or while the floor is being read) is looked up as before. The notes
 * are bounded: when they pass `maxNoted`, the floor rises to the median noted time and the notes at or
 * below it are dropped, which keeps the rule true (those ids are looked up again).
 */
export class NewRunFilter {
  /** Null until read: every id may exist. */
  private floor: number | null = null;
  /** Notes dropped while the floor was being read: ids up to this time are looked up whatever it says. */
  private droppedUpTo = 0;
  private readonly noted = new Set<string>();
  private generation = 0;

  constructor(private readonly maxNoted: number) {}

  /** Reads the floor from the stored locator rows; notes taken meanwhile stay valid. */
  async start(ch: ClickHouse): Promise<void> {
    const gen = this.generation;
    const rows = await ch.query<{ ms: number | string }>(
      `SELECT max(bitShiftRight(id_order, 16)) AS ms FROM ${RUNS_BY_ID} WHERE bitAnd(bitShiftRight(id_order, 12), 15) = 7`,
    );
    if (gen !== this.generation) return; // reset meanwhile: that reset's own start decides
    this.floor = Math.max(Number(rows[0]?.ms ?? 0), this.droppedUpTo);
  }

  /** Forgets everything (another writer may have written since): every id may exist until start() again. */
  reset(): void {
    this.generation++;
    this.floor = null;
    this.droppedUpTo = 0;
    this.noted.clear();
  }

  /** False only when the run (tenant key `key`, id `id`) is certain to have no stored row. */
  mayExist(key: string, id: string): boolean {
    if (this.floor === null) return true;
    const ms = uuidv7Millis(id);
    if (ms === null || ms <= this.floor) return true;
    return this.noted.has(key);
  }

  /** To be called before the run's rows are sent: from then on it may exist. */
  note(key: string, id: string): void {
    const ms = uuidv7Millis(id);
    // An id the floor covers is looked up anyway. While the floor is unknown, every UUIDv7 id is noted.
    if (ms === null || (this.floor !== null && ms <= this.floor)) return;
    this.noted.add(key);
    if (this.noted.size > this.maxNoted) this.raiseFloor();
  }

  get notedCount(): number {
    return this.noted.size;
  }

  private raiseFloor(): void {
    const times: number[] = [];
    for (const key of this.noted) times.push(uuidv7Millis(key.slice(key.length - 36)) ?? 0);
    times.sort((a, b) => a - b);
    const cut = times[Math.floor(times.length / 2)];
    for (const key of this.noted) if ((uuidv7Millis(key.slice(key.length - 36)) ?? 0) <= cut) this.noted.delete(key);
    if (this.floor !== null) this.floor = Math.max(this.floor, cut);
    else this.droppedUpTo = Math.max(this.droppedUpTo, cut); // the floor, once read, starts at least there
  }
}
