import { ParquetSchema } from '@dsnp/parquetjs';
import { EXPORT_FIELDS, RUN_FIELDS, type ExportField, type RunExportKind } from '@th/contracts';

type ParquetFieldDef = ConstructorParameters<typeof ParquetSchema>[0][string];

/** A standard 3-level Parquet LIST of strings. */
const stringList: ParquetFieldDef = { type: 'LIST', fields: { list: { repeated: true, fields: { element: { type: 'UTF8' } } } } };

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

/** ClickHouse expression that yields a field in the form the Parquet writer takes. */
function exportSql(f: ExportField): string {
  const nullable = isNullable(f);
  const asText = typeOf(f).startsWith('LowCardinality(') ? `toString(${f})` : f;
  switch (kindOf(f)) {
    case 'uuid':
      return nullable ? `if(${f} IS NULL, NULL, toString(${f}))` : `toString(${f})`;
    case 'text':
      return asText;
    case 'emptyText':
      return `if(${f} = '', NULL, ${asText})`;
    case 'json':
      return `if(${f} = '', NULL, ${f})`;
    case 'timestamp':
      return nullable ? `if(${f} IS NULL, NULL, toString(toUnixTimestamp64Micro(assumeNotNull(${f}))))` : `toString(toUnixTimestamp64Micro(${f}))`;
    case 'count':
      return `toString(${f})`;
    case 'list':
      return typeOf(f) === 'Array(UUID)' ? `arrayMap(x -> toString(x), ${f})` : f;
    case 'cost':
    case 'boolean':
      return f;
  }
}

/** ClickHouse expression that yields each field in the form the Parquet writer takes. */
export const FIELD_SQL = Object.fromEntries(EXPORT_FIELDS.map((f) => [f, exportSql(f)])) as Record<ExportField, string>;

const fieldsOfKind = (...kinds: RunExportKind[]): Set<ExportField> => new Set(EXPORT_FIELDS.filter((f) => kinds.includes(kindOf(f))));
/** Read back as text: 64-bit values that a JS number could not hold exactly. */
const BIGINT_FIELDS = fieldsOfKind('timestamp', 'count');
const LIST_FIELDS = fieldsOfKind('list');

/** The fields an export writes, in record order: all when none are named; `id` always (it keys resumption). */
export function exportFieldsOf(requested: readonly ExportField[] | null): ExportField[] {
  if (!requested || requested.length === 0) return [...EXPORT_FIELDS];
  const wanted = new Set<ExportField>(['id', ...requested]);
  return EXPORT_FIELDS.filter((f) => wanted.has(f));
}

export const PARQUET_COMPRESSIONS = ['UNCOMPRESSED', 'GZIP', 'SNAPPY', 'BROTLI'] as const;
export type ParquetCompression = (typeof PARQUET_COMPRESSIONS)[number];

/** Min/max statistics only where readers prune with them (times, counts); on text and JSON they cost time and bloat the footer. */
const WITH_STATISTICS = fieldsOfKind('timestamp', 'count', 'boolean');

function withOptions(def: ParquetFieldDef, compression: ParquetCompression, statistics: boolean): ParquetFieldDef {
  if (def.fields) return { ...def, fields: Object.fromEntries(Object.entries(def.fields).map(([k, v]) => [k, withOptions(v, compression, statistics)])) };
  return { ...def, compression, ...(statistics ? {} : { statistics: false }) };
}

export function parquetSchemaFor(fields: readonly ExportField[], compression: ParquetCompression = 'UNCOMPRESSED'): ParquetSchema {
  return new ParquetSchema(Object.fromEntries(fields.map((f) => [f, withOptions(PARQUET_FIELDS[f], compression, WITH_STATISTICS.has(f))])));
}

/** A row as ClickHouse returned it (FIELD_SQL forms) → the Parquet writer's row. */
export function toParquetRow(row: Record<string, unknown>, fields: readonly ExportField[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = row[f];
    if (v === null || v === undefined) out[f] = null;
    else if (BIGINT_FIELDS.has(f)) out[f] = BigInt(v as string);
    else if (LIST_FIELDS.has(f)) out[f] = { list: (v as string[]).map((element) => ({ element })) };
    else out[f] = v;
  }
  return out;
}
