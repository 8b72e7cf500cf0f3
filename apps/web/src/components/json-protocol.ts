/** A field of a run whose JSON is longer than this stays in the worker and is read a level at a time. */
export const LARGE_FIELD_CHARS = 256 * 1024;

export type JsonPath = (string | number)[];
export type JsonKind = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null';
/** An entry of an object or array: containers with their size, strings with their length and a preview. */
export interface JsonEntry {
  key: string | number;
  kind: JsonKind;
  size: number;
  preview?: string;
}

/** A field left in the worker: its kind and size, and its JSON length. */
export type LargeField = JsonEntry & { chars: number };

export type WorkerRequest =
  | { id: number; type: 'load'; key: string; url: string; headers: Record<string, string> }
  | { id: number; type: 'entries'; key: string; path: JsonPath; offset: number; limit: number }
  | { id: number; type: 'text'; key: string; path: JsonPath; chars: number };

export type WorkerReply =
  | { id: number; type: 'loaded'; run: Record<string, unknown>; large: Record<string, LargeField> }
  | { id: number; type: 'entries'; entries: JsonEntry[]; total: number }
  | { id: number; type: 'text'; text: string; total: number }
  | { id: number; type: 'error'; status: number; detail: unknown };

/** Characters of a string shown in its entry (the whole string is read on request). */
const PREVIEW_CHARS = 200;

/** One entry of an object or array as the page lists it: never more than a preview of its value. */
export function entryOf(key: string | number, v: unknown): JsonEntry {
  if (Array.isArray(v)) return { key, kind: 'array', size: v.length };
  if (v !== null && typeof v === 'object') return { key, kind: 'object', size: Object.keys(v).length };
  if (typeof v === 'string') return { key, kind: 'string', size: v.length, preview: v.length > PREVIEW_CHARS ? v.slice(0, PREVIEW_CHARS) : v };
  return { key, kind: v === null ? 'null' : (typeof v as 'number' | 'boolean'), size: 0, preview: String(v) };
}

export function entriesOf(v: unknown, offset: number, limit: number): { entries: JsonEntry[]; total: number } {
  if (Array.isArray(v)) {
    const end = Math.min(v.length, offset + limit);
    const entries: JsonEntry[] = [];
    for (let i = offset; i < end; i++) entries.push(entryOf(i, v[i]));
    return { entries, total: v.length };
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    return { entries: keys.slice(offset, offset + limit).map((k) => entryOf(k, (v as Record<string, unknown>)[k])), total: keys.length };
  }
  return { entries: [], total: 0 };
}
