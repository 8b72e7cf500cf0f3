import type { ClickHouse } from '@th/clickhouse';
import { RUNS_BY_ID } from '@th/clickhouse';

/** The value of hex digit `c` (a char code), or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48; // 0-9
  c |= 0x20; // lower case
  return c >= 97 && c <= 102 ? c - 87 : -1; // a-f
}

/** Milliseconds since the epoch in a UUIDv7 (its first 48 bits), or null for any other kind of id. */
export function uuidv7Millis(id: string): number | null {
  if (id.length !== 36 || id.charCodeAt(14) !== 0x37 /* '7' */ || id.charCodeAt(8) !== 0x2d /* '-' */) return null;
  // Read in place: no slices to allocate for every run of a batch.
  let ms = 0;
  for (let i = 0; i < 13; i++) {
    if (i === 8) continue;
    const d = hexDigit(id.charCodeAt(i));
    if (d < 0) return null;
    ms = ms * 16 + d;
  }
  return ms;
}

/** Seconds are noted relative to this instant (2023-11-14): they stay small integers for decades. */
const NOTE_EPOCH_S = 1_700_000_000;

/**
 * A 30-bit number for a run (`key` is `tenant:id`): the last 28 bits of its id (random in a UUIDv7)
 * mixed with bits of its tenant. Two runs may share it; the filter then only looks one up needlessly.
 */
function noteHash(key: string): number {
  let h = 0;
  for (let i = key.length - 7; i < key.length; i++) h = (h << 4) | (hexDigit(key.charCodeAt(i)) & 15);
  let t = 0;
  for (let i = 0; i < 8; i++) t = (t << 4) | (hexDigit(key.charCodeAt(i)) & 15);
  return (h ^ (t >>> 2) ^ ((t & 3) << 28)) & 0x3fffffff;
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
 *
 * A note is a small integer (a hash of the run, see noteHash) mapped to its id's second, both small
 * integers that V8 stores in the map's table itself: remembering half a million runs as strings had
 * every note's key copied by two young-generation collections and then kept in the old generation,
 * and each lookup hashing a fresh 73-character key. A shared hash can only make a new run look as if it
 * may exist, which costs a lookup, never a wrong merge.
 */
export class NewRunFilter {
  /** Null until read: every id may exist. */
  private floor: number | null = null;
  /** Notes dropped while the floor was being read: ids up to this time are looked up whatever it says. */
  private droppedUpTo = 0;
  /** noteHash(key) -> the newest second (since NOTE_EPOCH_S) of the ids noted under it. */
  private readonly noted = new Map<number, number>();
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
    return this.noted.has(noteHash(key));
  }

  /** To be called before the run's rows are sent: from then on it may exist. */
  note(key: string, id: string): void {
    const ms = uuidv7Millis(id);
    // An id the floor covers is looked up anyway. While the floor is unknown, every UUIDv7 id is noted.
    if (ms === null || (this.floor !== null && ms <= this.floor)) return;
    const h = noteHash(key);
    const second = Math.floor(ms / 1000) - NOTE_EPOCH_S;
    const prev = this.noted.get(h);
    if (prev === undefined || prev < second) this.noted.set(h, second);
    if (this.noted.size > this.maxNoted) this.raiseFloor();
  }

  get notedCount(): number {
    return this.noted.size;
  }

  private raiseFloor(): void {
    const seconds = [...this.noted.values()].sort((a, b) => a - b);
    const cut = seconds[Math.floor(seconds.length / 2)];
    for (const [h, second] of this.noted) if (second <= cut) this.noted.delete(h);
    // Every id whose second is at or below the cut is looked up from now on: its last millisecond.
    const floor = (cut + NOTE_EPOCH_S + 1) * 1000 - 1;
    if (this.floor !== null) this.floor = Math.max(this.floor, floor);
    else this.droppedUpTo = Math.max(this.droppedUpTo, floor); // the floor, once read, starts at least there
  }
}
