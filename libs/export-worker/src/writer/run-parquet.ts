import { ParquetSchema } from '@dsnp/parquetjs';
import { EXPORT_FIELDS, RUN_FIELDS, type ExportField, type RunExportKind } from '@th/contracts';

type ParquetFieldDef = ConstructorParameters<typeof ParquetSchema>[0][string];

/** A standard 3-level Parquet LIST of strings. */
const stringList: ParquetFieldDef = { type: 'LIST', fields: { list: { repeated: true, fields: { element: { type: 'UTF8' } } } } };

/** The Parquet type of each kind of exported value: the files' published schema, which the engine's output must match. */
const PARQUET_TYPES: Readonly<Record<RunExportKind, ParquetFieldDef>> = {
  uuid: { type: 'UTF8' },
  text: { type: 'UTF8' },
  emptyText: { type: 'UTF8', optional: true },
  /** JSON documents are written as their text (UTF8), exactly as stored. */
  json: { type: 'UTF8', optional: true },
  timestamp: { type: 'TIMESTAMP_MICROS' },
  count: { type: 'INT64' },
  cost: { type: 'DOUBLE', optional: true },
  boolean: { type: 'BOOLEAN' },
  list: stringList,
};

const kindOf = (f: ExportField): RunExportKind => RUN_FIELDS[f].export;
const typeOf = (f: ExportField): string => RUN_FIELDS[f].column.type;
const isNullable = (f: ExportField): boolean => typeOf(f).startsWith('Nullable(');

/** The Parquet type of each field of the run record, as exported. */
export const PARQUET_FIELDS = Object.fromEntries(
  EXPORT_FIELDS.map((f) => {
    const def = PARQUET_TYPES[kindOf(f)];
    return [f, isNullable(f) ? { ...def, optional: true } : def];
  }),
) as Record<ExportField, ParquetFieldDef>;

/** The published schema of an export's files with these fields (what readers see; tests compare the files with it). */
export function parquetSchemaFor(fields: readonly ExportField[]): ParquetSchema {
  return new ParquetSchema(Object.fromEntries(fields.map((f) => [f, PARQUET_FIELDS[f]])));
}

/**
 * ClickHouse expression whose type the engine writes as the field's Parquet type: String → UTF8
 * (REQUIRED unless Nullable), DateTime64(6) → INT64 TIMESTAMP_MICROS, Int64 → INT64, Float64 → DOUBLE,
 * Bool → BOOLEAN, Array(String) → LIST of UTF8 `list`/`element`. UUIDs and LowCardinality become plain
 * text; empty JSON and empty optional text become NULL.
 */
function exportSql(f: ExportField): string {
  const asText = typeOf(f).startsWith('LowCardinality(') ? `toString(${f})` : f;
  switch (kindOf(f)) {
    case 'uuid':
      return `toString(${f})`;
    case 'text':
      return asText;
    case 'emptyText':
    case 'json':
      return `if(${f} = '', NULL, ${asText})`;
    case 'timestamp':
      return f;
    case 'count':
      return `toInt64(${f})`;
    case 'list':
      return typeOf(f) === 'Array(UUID)' ? `arrayMap(x -> toString(x), ${f})` : f;
    case 'cost':
    case 'boolean':
      return f;
  }
}

/** ClickHouse expression that yields each field in its exported Parquet type. */
export const FIELD_SQL = Object.fromEntries(EXPORT_FIELDS.map((f) => [f, exportSql(f)])) as Record<ExportField, string>;

/** The fields an export writes, in record order: all when none are named; `id` always (it keys resumption). */
export function exportFieldsOf(requested: readonly ExportField[] | null): ExportField[] {
  if (!requested || requested.length === 0) return [...EXPORT_FIELDS];
  const wanted = new Set<ExportField>(['id', ...requested]);
  return EXPORT_FIELDS.filter((f) => wanted.has(f));
}

/** Page compressions every Parquet reader (parquetjs included) can read. */
export const PARQUET_COMPRESSIONS = ['UNCOMPRESSED', 'GZIP', 'SNAPPY', 'BROTLI'] as const;
export type ParquetCompression = (typeof PARQUET_COMPRESSIONS)[number];

const ENGINE_COMPRESSION: Readonly<Record<ParquetCompression, string>> = { UNCOMPRESSED: 'none', GZIP: 'gzip', SNAPPY: 'snappy', BROTLI: 'brotli' };

/**
 * The engine's Parquet output settings, pinned so that a ClickHouse upgrade cannot change the files:
 * strings as UTF8 (not raw binary), the native writer, row groups bounded in rows and bytes (the engine
 * holds one row group in memory while writing).
 */
export function parquetOutputSettings(o: { compression: ParquetCompression; rowGroupRows: number; rowGroupBytes: number }): Record<string, string | number> {
  return {
    output_format_parquet_compression_method: ENGINE_COMPRESSION[o.compression],
    output_format_parquet_string_as_string: 1,
    output_format_parquet_fixed_string_as_fixed_byte_array: 0,
    output_format_parquet_use_custom_encoder: 1,
    output_format_parquet_row_group_size: o.rowGroupRows,
    output_format_parquet_row_group_size_bytes: o.rowGroupBytes,
  };
}
