import { toEpochMicros } from '@th/contracts';
import type { RowBinaryBuffer } from './row-binary';

/** Writes one value of a column in RowBinary. */
export type RowBinaryWrite = (w: RowBinaryBuffer, v: unknown) => void;
/** Writes a column type's default value (NULL for a Nullable one). */
export type RowBinaryWriteDefault = (w: RowBinaryBuffer) => void;

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

const inner = (type: string, wrapper: string): string | null =>
  type.startsWith(`${wrapper}(`) && type.endsWith(')') ? type.slice(wrapper.length + 1, -1) : null;

const text = (v: unknown): string => (typeof v === 'string' ? v : String(v));

/**
 * The RowBinary writer of a ClickHouse column type, as system.columns spells it. Values: a UUID as
 * its text, a DateTime64(6) as ISO text (an unreadable one is the epoch), a DateTime as seconds since
 * the epoch, a Map(String, String) as an object, an Array as an array, NULL as null or undefined.
 * A type it does not know throws when the writer is made, not while rows are written.
 */
export function rowBinaryWriter(type: string): RowBinaryWrite {
  return rowBinaryWriterOf(type, (v: unknown) => v);
}

/**
 * rowBinaryWriter of the value `get` takes from a row's source: one call per column and row fewer
 * than writing what get returns (the writer encodes some forty columns per run).
 */
export function rowBinaryWriterOf<S>(type: string, get: (s: S) => unknown): (w: RowBinaryBuffer, s: S) => void {
  const low = inner(type, 'LowCardinality');
  if (low) return rowBinaryWriterOf(low, get);
  if (type === 'Nullable(UUID)') return (w, s) => w.nullableUuid(get(s) as string | null | undefined);
  const nullable = inner(type, 'Nullable');
  if (nullable) {
    const write = rowBinaryWriter(nullable);
    return (w, s) => {
      const v = get(s);
      if (v === null || v === undefined) return w.null();
      w.notNull();
      write(w, v);
    };
  }
  const array = inner(type, 'Array');
  if (array) {
    const write = rowBinaryWriter(array);
    return (w, s) => {
      const list = get(s) as readonly unknown[];
      w.varUInt(list.length);
      for (const x of list) write(w, x);
    };
  }
  if (type === 'Map(String, String)') {
    return (w, s) => {
      const map = get(s) as Record<string, unknown>;
      const keys = Object.keys(map);
      w.varUInt(keys.length);
      for (const k of keys) {
        w.string(k);
        w.string(text(map[k]));
      }
    };
  }
  switch (type) {
    case 'UUID':
      return (w, s) => w.uuid(get(s) as string);
    case 'String':
      return (w, s) => w.string(text(get(s)));
    case 'Bool':
      return (w, s) => w.bool(get(s) as boolean);
    case 'UInt8':
      return (w, s) => w.uint8(get(s) as number);
    case 'UInt32':
      return (w, s) => w.uint32(get(s) as number);
    case 'UInt64':
      return (w, s) => w.uint64(get(s) as number);
    case 'Float64':
      return (w, s) => w.float64(get(s) as number);
    case "DateTime64(6, 'UTC')":
      return (w, s) => w.int64(toEpochMicros(get(s) as string) ?? 0);
    case "DateTime('UTC')":
      return (w, s) => w.uint32(get(s) as number);
  }
  throw new Error(`no RowBinary writer for the ClickHouse type ${type}`);
}

/** The RowBinary writer of a column type's default value: NULL, empty, zero or the epoch. */
export function rowBinaryDefault(type: string): RowBinaryWriteDefault {
  if (inner(type, 'Nullable')) return (w) => w.null();
  if (inner(type, 'Array') || inner(type, 'Map')) return (w) => w.varUInt(0);
  const write = rowBinaryWriter(type);
  const low = inner(type, 'LowCardinality') ?? type;
  const value = low === 'UUID' ? NIL_UUID : low === 'String' ? '' : low === 'Bool' ? false : low.startsWith('DateTime64') ? '1970-01-01T00:00:00Z' : 0;
  return (w) => write(w, value);
}
