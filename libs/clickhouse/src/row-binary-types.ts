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
  const low = inner(type, 'LowCardinality');
  if (low) return rowBinaryWriter(low);
  if (type === 'Nullable(UUID)') return (w, v) => w.nullableUuid(v as string | null | undefined);
  const nullable = inner(type, 'Nullable');
  if (nullable) {
    const write = rowBinaryWriter(nullable);
    return (w, v) => {
      if (v === null || v === undefined) return w.null();
      w.notNull();
      write(w, v);
    };
  }
  const array = inner(type, 'Array');
  if (array) {
    const write = rowBinaryWriter(array);
    return (w, v) => {
      const list = v as readonly unknown[];
      w.varUInt(list.length);
      for (const x of list) write(w, x);
    };
  }
  if (type === 'Map(String, String)') {
    return (w, v) => {
      const map = v as Record<string, unknown>;
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
      return (w, v) => w.uuid(v as string);
    case 'String':
      return (w, v) => w.string(text(v));
    case 'Bool':
      return (w, v) => w.bool(v as boolean);
    case 'UInt8':
      return (w, v) => w.uint8(v as number);
    case 'UInt32':
      return (w, v) => w.uint32(v as number);
    case 'UInt64':
      return (w, v) => w.uint64(v as number);
    case 'Float64':
      return (w, v) => w.float64(v as number);
    case "DateTime64(6, 'UTC')":
      return (w, v) => w.int64(toEpochMicros(v as string) ?? 0);
    case "DateTime('UTC')":
      return (w, v) => w.uint32(v as number);
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
