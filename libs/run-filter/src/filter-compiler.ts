import { RUN_FIELDS, RUN_FILTER_FIELDS, type RunFieldDef, type RunFilterField, type RunFilterKind } from '@th/contracts';
import { FilterSyntaxError } from './filter.errors';
import {
  parseFilter,
  type FilterAnd,
  type FilterComparator,
  type FilterComparison,
  type FilterField,
  type FilterNode,
  type FilterScalarValue,
  type FilterValue,
} from './filter-parser';

export type FilterParamValue = string | number | boolean | string[] | number[];

export interface CompileFilterOptions {
  /** Prefix of generated parameter names: `{<prefix>0:String}`, `{<prefix>1:Float64}`, ... */
  paramPrefix: string;
  /** Name of the UUID query parameter holding the tenant id; bound by the caller, not by compileFilter. */
  tenantParam: string;
  /** Bounds on feedback `modified_at` (RFC 3339; min inclusive, max exclusive), applied to every feedback condition. */
  feedbackModifiedAt?: { min?: string; max?: string };
}

export interface CompiledFilter {
  /** A boolean ClickHouse expression over table `runs`, usable inside WHERE. */
  sql: string;
  params: Record<string, FilterParamValue>;
  /** Whether the expression has a feedback condition (feedback_key, feedback_score, feedback_value). */
  usesFeedback: boolean;
}

type ScalarType = 'String' | 'Float64' | 'Bool' | 'UUID' | 'DateTime';

interface Operand {
  sql: string;
  type: ScalarType;
  nullable: boolean;
  /** Field name used in error messages. */
  label: string;
  /** latency: "5s", "200ms" are accepted and converted to seconds. */
  acceptsDurations?: boolean;
  /** feedback_score: true/false are stored as 1/0. */
  booleansAsNumbers?: boolean;
  /** metadata values are stringified at ingest, so true/false compare as 'true'/'false'. */
  booleansAsStrings?: boolean;
}

type Rhs = { kind: 'null' } | { kind: 'sql'; sql: string };

type Family = 'metadata' | 'input' | 'output';

type FieldSpec =
  | { kind: 'column'; operand: Operand; comparators: readonly FilterComparator[] }
  | { kind: 'error' }
  | { kind: 'tags' }
  | { kind: 'metadata' }
  | { kind: 'json'; column: 'inputs' | 'outputs' }
  | { kind: 'key'; family: Family }
  | { kind: 'value'; family: Family }
  | { kind: 'feedback'; part: 'key' | 'score' | 'value' };

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const ISO_TIME_RE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|z|[+-](\d{2})(?::?(\d{2}))?)?)?$/;
const DURATION_RE = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*(us|ms|s|m|h)?\s*$/;
const DURATION_UNIT_SECONDS: Readonly<Record<string, number>> = { us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
const PARAM_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;


const ORDERED: readonly FilterComparator[] = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte'];
const UUID_CMP: readonly FilterComparator[] = ['eq', 'neq', 'in'];
const STRING_CMP: readonly FilterComparator[] = [...ORDERED, 'in', 'search', 'like', 'ilike'];
const NUMBER_CMP: readonly FilterComparator[] = [...ORDERED, 'in'];
const TEXT_MATCH: readonly FilterComparator[] = ['search', 'like', 'ilike'];

const ERROR_CMP: readonly FilterComparator[] = ['eq', 'neq', 'in', 'search', 'like', 'ilike'];
const TAGS_CMP: readonly FilterComparator[] = ['has', 'eq', 'neq', 'in', 'search', 'like', 'ilike'];
const METADATA_CMP: readonly FilterComparator[] = ['has', 'search'];
const JSON_CMP: readonly FilterComparator[] = ['has', 'search', 'like', 'ilike'];
const KEY_CMP: readonly FilterComparator[] = ['eq', 'neq', 'in', 'search', 'like', 'ilike'];
const VALUE_CMP: readonly FilterComparator[] = [...ORDERED, 'in', 'search', 'like', 'ilike'];
const FEEDBACK_CMP: Readonly<Record<'key' | 'score' | 'value', readonly FilterComparator[]>> = {
  key: ['eq', 'neq', 'in', 'search', 'like', 'ilike'],
  score: NUMBER_CMP,
  value: ['eq', 'neq', 'in', 'search', 'like', 'ilike'],
};

/** The scalar a column filter compares, by the column's ClickHouse type. */
function scalarOf(chType: string): ScalarType {
  const t = chType.replace(/^Nullable\((.*)\)$/, '$1').replace(/^LowCardinality\((.*)\)$/, '$1');
  if (t === 'UUID' || t === 'String' || t === 'Bool') return t;
  if (t.startsWith('DateTime')) return 'DateTime';
  if (t.startsWith('UInt') || t.startsWith('Int') || t.startsWith('Float')) return 'Float64';
  throw new Error(`no filter scalar for the ClickHouse type ${chType}`);
}

const KIND_COMPARATORS: Readonly<Record<'uuid' | 'string' | 'number' | 'time' | 'bool', readonly FilterComparator[]>> = {
  uuid: UUID_CMP,
  string: STRING_CMP,
  number: NUMBER_CMP,
  time: ORDERED,
  bool: ['eq', 'neq'],
};

/** A run field's filter, from its declaration in RUN_FIELDS. */
function runFieldSpec(field: RunFilterField, def: RunFieldDef): FieldSpec {
  const kind = def.filter as RunFilterKind;
  switch (kind) {
    case 'error':
    case 'tags':
    case 'metadata':
      return { kind };
    case 'json':
      return { kind: 'json', column: field as 'inputs' | 'outputs' };
    case 'duration':
      return {
        kind: 'column',
        operand: { sql: def.sql as string, type: 'Float64', nullable: true, label: field, acceptsDurations: true },
        comparators: NUMBER_CMP,
      };
    default: {
      if (!def.column) return { kind: 'column', operand: { sql: def.sql as string, type: 'String', nullable: true, label: field }, comparators: KIND_COMPARATORS[kind] };
      const type = def.column.type;
      return { kind: 'column', operand: { sql: field, type: scalarOf(type), nullable: type.startsWith('Nullable('), label: field }, comparators: KIND_COMPARATORS[kind] };
    }
  }
}

const FIELD_SPECS: Readonly<Record<FilterField, FieldSpec>> = {
  ...(Object.fromEntries(RUN_FILTER_FIELDS.map((f) => [f, runFieldSpec(f, RUN_FIELDS[f])])) as Record<RunFilterField, FieldSpec>),
  metadata_key: { kind: 'key', family: 'metadata' },
  metadata_value: { kind: 'value', family: 'metadata' },
  input_key: { kind: 'key', family: 'input' },
  input_value: { kind: 'value', family: 'input' },
  output_key: { kind: 'key', family: 'output' },
  output_value: { kind: 'value', family: 'output' },
  feedback_key: { kind: 'feedback', part: 'key' },
  feedback_score: { kind: 'feedback', part: 'score' },
  feedback_value: { kind: 'feedback', part: 'value' },
};

function comparatorsFor(spec: FieldSpec): readonly FilterComparator[] {
  switch (spec.kind) {
    case 'column':
      return spec.comparators;
    case 'error':
      return ERROR_CMP;
    case 'tags':
      return TAGS_CMP;
    case 'metadata':
      return METADATA_CMP;
    case 'json':
      return JSON_CMP;
    case 'key':
      return KEY_CMP;
    case 'value':
      return VALUE_CMP;
    case 'feedback':
      return FEEDBACK_CMP[spec.part];
  }
}

const SQL_OPERATORS: Readonly<Partial<Record<FilterComparator, string>>> = {
  eq: '=',
  neq: '!=',
  gt: '>',
  gte: '>=',
  lt: '<',
  lte: '<=',
};

function describeKind(v: FilterValue): string {
  if (v.kind === 'null') return 'null';
  return v.kind === 'array' ? 'an array' : `a ${v.kind}`;
}

function expectedFor(op: Operand): string {
  switch (op.type) {
    case 'String':
      return 'a string';
    case 'Float64':
      return op.acceptsDurations ? 'a number of seconds or a duration string like "5s"' : 'a number';
    case 'Bool':
      return 'true or false';
    case 'UUID':
      return 'a UUID string';
    case 'DateTime':
      return 'an ISO-8601 timestamp string';
  }
}

/** parseDateTime64BestEffort would fail at query time (a 500) on garbage, so reject it here. */
function isIsoTimestamp(s: string): boolean {
  const m = ISO_TIME_RE.exec(s);
  if (m === null) return false;
  const [, , mo, d, h = '0', mi = '0', sec = '0', oh = '0', om = '0'] = m;
  return (
    +mo >= 1 && +mo <= 12 && +d >= 1 && +d <= 31 && +h <= 23 && +mi <= 59 && +sec <= 59 && +oh <= 14 && +om <= 59
  );
}

function joinAll(parts: string[], op: 'AND' | 'OR'): string {
  return parts.length === 1 ? parts[0] : `(${parts.join(` ${op} `)})`;
}

interface KeyRef {
  exists: string;
  /** Arguments after the JSON column (JSON families) or the map subscript (metadata). */
  args: string;
}

class FilterCompiler {
  private readonly params: Record<string, FilterParamValue> = {};
  private counter = 0;
  private usesFeedback = false;

  constructor(private readonly opts: CompileFilterOptions) {}

  compile(node: FilterNode): CompiledFilter {
    const sql = this.node(node);
    return { sql, params: this.params, usesFeedback: this.usesFeedback };
  }

  private bind(value: FilterParamValue, type: string): string {
    const name = `${this.opts.paramPrefix}${this.counter++}`;
    this.params[name] = value;
    return `{${name}:${type}}`;
  }

  private node(node: FilterNode): string {
    switch (node.type) {
      case 'and':
        return this.and(node);
      case 'or':
        return joinAll(node.operands.map((o) => this.node(o)), 'OR');
      case 'not':
        return `NOT (${this.node(node.operand)})`;
      case 'comparison':
        return this.comparison(node);
    }
  }

  /**
   * Key/value comparisons (metadata_key + metadata_value, feedback_key + feedback_score, ...)
   * that are siblings in one `and` describe the same map entry or feedback row, so they are
   * grouped by order of appearance and compiled together.
   */
  private and(node: FilterAnd): string {
    const comparisons = node.operands.filter((o): o is FilterComparison => o.type === 'comparison');
    const grouped = new Map<FilterComparison, FilterComparison[]>();
    const consumed = new Set<FilterComparison>();

    for (const family of ['metadata', 'input', 'output'] as const) {
      const keys = comparisons.filter(
        (c) => c.field?.name === `${family}_key` && (c.comparator === 'eq' || c.comparator === 'in'),
      );
      const values = comparisons.filter((c) => c.field?.name === `${family}_value`);
      const n = Math.min(keys.length, values.length);
      for (let i = 0; i < n; i++) {
        grouped.set(keys[i], [keys[i], values[i]]);
        consumed.add(keys[i]);
        consumed.add(values[i]);
      }
    }

    const fb = (part: string) => comparisons.filter((c) => c.field?.name === `feedback_${part}`);
    const fbKeys = fb('key');
    const fbScores = fb('score');
    const fbValues = fb('value');
    if (fbKeys.length + fbScores.length + fbValues.length > 1) {
      const n = Math.max(fbKeys.length, fbScores.length, fbValues.length);
      for (let i = 0; i < n; i++) {
        const group = [fbKeys[i], fbScores[i], fbValues[i]].filter((c): c is FilterComparison => c !== undefined);
        if (group.length < 2) continue;
        const first = group.reduce((a, b) => (node.operands.indexOf(a) <= node.operands.indexOf(b) ? a : b));
        grouped.set(first, group);
        for (const c of group) consumed.add(c);
      }
    }

    const parts: string[] = [];
    for (const operand of node.operands) {
      if (operand.type === 'comparison') {
        const group = grouped.get(operand);
        if (group !== undefined) {
          parts.push(this.group(group));
          continue;
        }
        if (consumed.has(operand)) continue;
      }
      parts.push(this.node(operand));
    }
    return joinAll(parts, 'AND');
  }

  private group(group: FilterComparison[]): string {
    for (const c of group) this.checkComparator(c);
    const first = group[0];
    const spec = this.spec(first);
    if (spec.kind === 'key') return this.keyedPair(spec.family, first, group[1]);
    return this.feedbackSubquery(group);
  }

  private spec(node: FilterComparison): FieldSpec {
    if (node.field === null) throw new FilterSyntaxError('expected a field name', node.position);
    return FIELD_SPECS[node.field.name];
  }

  private checkComparator(node: FilterComparison): void {
    if (node.field === null) return;
    const allowed = comparatorsFor(FIELD_SPECS[node.field.name]);
    if (!allowed.includes(node.comparator)) {
      throw new FilterSyntaxError(
        `comparator '${node.comparator}' is not supported for field '${node.field.written}'; supported: ${allowed.join(', ')}`,
        node.position,
      );
    }
  }

  private comparison(node: FilterComparison): string {
    if (node.field === null) return this.searchAll(node);
    this.checkComparator(node);
    const spec = FIELD_SPECS[node.field.name];
    // Lone neq on set-like fields is the exact complement of eq (runs without that tag / key / feedback).
    if (node.comparator === 'neq' && spec.kind !== 'column' && spec.kind !== 'error') {
      return `NOT (${this.comparison({ ...node, comparator: 'eq' })})`;
    }
    switch (spec.kind) {
      case 'column':
        return this.compare(spec.operand, node, true);
      case 'error':
        return this.errorField(node);
      case 'tags':
        return this.tags(node);
      case 'metadata':
        return this.metadata(node);
      case 'json':
        return this.json(spec.column, node);
      case 'key':
        return this.loneKey(spec.family, node);
      case 'value':
        return this.loneValue(spec.family, node);
      case 'feedback':
        return this.feedbackSubquery([node]);
    }
  }

  private searchAll(node: FilterComparison): string {
    const p = this.bind(this.stringLiteral(node.value, 'search'), 'String');
    const hit = (sql: string) => `positionCaseInsensitiveUTF8(${sql}, ${p}) > 0`;
    return `(${hit('name')} OR ${hit('inputs')} OR ${hit('outputs')} OR ifNull(${hit('error')}, 0))`;
  }

  private stringLiteral(value: FilterValue, what: string): string {
    if (value.kind !== 'string') {
      throw new FilterSyntaxError(`${what} expects a string value, found ${describeKind(value)}`, value.position);
    }
    return value.value;
  }

  // ---- generic operand comparison -------------------------------------------------------------

  private compare(op: Operand, node: FilterComparison, wrapNulls: boolean): string {
    return this.apply(op.sql, op.nullable && wrapNulls, node.comparator, this.rhs(op, node));
  }

  private rhs(op: Operand, node: FilterComparison): Rhs {
    const { comparator, value } = node;
    if (value.kind === 'null') {
      if (comparator !== 'eq' && comparator !== 'neq') {
        throw new FilterSyntaxError(`null can only be compared with eq or neq`, value.position);
      }
      if (!op.nullable) throw new FilterSyntaxError(`field '${op.label}' is never null`, value.position);
      return { kind: 'null' };
    }
    if (TEXT_MATCH.includes(comparator) && op.type !== 'String') {
      throw new FilterSyntaxError(`comparator '${comparator}' needs a string field, not '${op.label}'`, node.position);
    }
    if (op.type === 'Bool' && comparator !== 'eq' && comparator !== 'neq') {
      throw new FilterSyntaxError(`comparator '${comparator}' is not supported for boolean values`, node.position);
    }
    const paramType = op.type === 'DateTime' ? 'String' : op.type;
    if (value.kind === 'array') {
      const numbers: number[] = [];
      const strings: string[] = [];
      for (const item of value.items) {
        const lit = this.literal(op, item);
        if (typeof lit === 'number') numbers.push(lit);
        else if (typeof lit === 'string') strings.push(lit);
        else throw new FilterSyntaxError(`'in' is not supported for boolean values`, item.position);
      }
      const list = op.type === 'Float64' ? numbers : strings;
      return { kind: 'sql', sql: this.bind(list, `Array(${paramType})`) };
    }
    const placeholder = this.bind(this.literal(op, value), paramType);
    if (op.type === 'DateTime') return { kind: 'sql', sql: `parseDateTime64BestEffort(${placeholder}, 6, 'UTC')` };
    return { kind: 'sql', sql: placeholder };
  }

  private literal(op: Operand, v: FilterScalarValue): string | number | boolean {
    const mismatch = (): never => {
      throw new FilterSyntaxError(`field '${op.label}' expects ${expectedFor(op)}, found ${describeKind(v)}`, v.position);
    };
    switch (op.type) {
      case 'String':
        if (v.kind === 'string') return v.value;
        if (v.kind === 'boolean' && op.booleansAsStrings) return String(v.value);
        return mismatch();
      case 'Float64':
        if (v.kind === 'number') return v.value;
        if (v.kind === 'boolean' && op.booleansAsNumbers) return v.value ? 1 : 0;
        if (v.kind === 'string' && op.acceptsDurations) {
          const m = DURATION_RE.exec(v.value);
          if (m === null) {
            throw new FilterSyntaxError(`invalid duration '${v.value}'; use seconds or e.g. "500ms", "5s", "2m"`, v.position);
          }
          return Number(m[1]) * DURATION_UNIT_SECONDS[m[2] ?? 's'];
        }
        return mismatch();
      case 'Bool':
        if (v.kind === 'boolean') return v.value;
        return mismatch();
      case 'UUID':
        if (v.kind === 'string' && UUID_RE.test(v.value)) return v.value.toLowerCase();
        if (v.kind === 'string') throw new FilterSyntaxError(`field '${op.label}' expects a UUID, found '${v.value}'`, v.position);
        return mismatch();
      case 'DateTime':
        if (v.kind === 'string' && isIsoTimestamp(v.value.trim())) return v.value.trim();
        if (v.kind === 'string') {
          throw new FilterSyntaxError(`field '${op.label}' expects an ISO-8601 timestamp, found '${v.value}'`, v.position);
        }
        return mismatch();
    }
  }

  private apply(sql: string, wrapNulls: boolean, comparator: FilterComparator, rhs: Rhs): string {
    if (rhs.kind === 'null') return comparator === 'eq' ? `${sql} IS NULL` : `${sql} IS NOT NULL`;
    let expr: string;
    switch (comparator) {
      case 'in':
        expr = `${sql} IN ${rhs.sql}`;
        break;
      case 'search':
        expr = `positionCaseInsensitiveUTF8(${sql}, ${rhs.sql}) > 0`;
        break;
      case 'like':
        expr = `${sql} LIKE ${rhs.sql}`;
        break;
      case 'ilike':
        expr = `${sql} ILIKE ${rhs.sql}`;
        break;
      case 'has':
        throw new Error('unreachable: has is handled per field');
      default:
        expr = `${sql} ${SQL_OPERATORS[comparator]} ${rhs.sql}`;
    }
    // NULL operands must not leak NULL into NOT/OR: eq/gt/... are false and neq is true, so neq == not(eq).
    return wrapNulls ? `ifNull(${expr}, ${comparator === 'neq' ? 1 : 0})` : expr;
  }

  // ---- special fields ---------------------------------------------------------------------------

  private errorField(node: FilterComparison): string {
    const { comparator, value } = node;
    if (value.kind === 'boolean' && (comparator === 'eq' || comparator === 'neq')) {
      const errored = (comparator === 'eq') === value.value;
      return errored ? 'error IS NOT NULL' : 'error IS NULL';
    }
    return this.compare({ sql: 'error', type: 'String', nullable: true, label: 'error' }, node, true);
  }

  private tags(node: FilterComparison): string {
    const op: Operand = { sql: 't', type: 'String', nullable: false, label: node.field?.written ?? 'tags' };
    switch (node.comparator) {
      case 'has':
      case 'eq':
        return `has(tags, ${this.bind(this.literal(op, this.scalar(node.value)), 'String')})`;
      case 'in':
        return `hasAny(tags, ${this.rhsSql(op, node)})`;
      default:
        return `arrayExists(t -> ${this.compare(op, node, false)}, tags)`;
    }
  }

  private metadata(node: FilterComparison): string {
    const op: Operand = { sql: 'v', type: 'String', nullable: false, label: 'metadata' };
    if (node.comparator === 'search') return `arrayExists(v -> ${this.compare(op, node, false)}, mapValues(metadata))`;
    const raw = this.stringLiteral(node.value, `'has(metadata, ...)'`);
    if (!raw.trimStart().startsWith('{')) return `mapContains(metadata, ${this.bind(raw, 'String')})`;
    // has(metadata, '{"k": "v"}') is LangSmith's JSON-blob form: every pair must be present.
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new FilterSyntaxError(`has(metadata, ...) expects a key or a JSON object, found invalid JSON`, node.value.position);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
      throw new FilterSyntaxError(`has(metadata, ...) expects a non-empty JSON object`, node.value.position);
    }
    const parts: string[] = [];
    for (const [k, v] of Object.entries(parsed)) {
      const kp = this.bind(k, 'String');
      const vp = this.bind(typeof v === 'string' ? v : JSON.stringify(v), 'String');
      parts.push(`mapContains(metadata, ${kp}) AND metadata[${kp}] = ${vp}`);
    }
    return `(${parts.join(' AND ')})`;
  }

  private json(col: 'inputs' | 'outputs', node: FilterComparison): string {
    if (node.comparator === 'has') {
      return this.keyRef(this.familyOf(col), this.stringLiteral(node.value, `'has(${col}, ...)'`), node.value.position).exists;
    }
    return this.compare({ sql: col, type: 'String', nullable: false, label: col }, node, false);
  }

  private familyOf(col: 'inputs' | 'outputs'): Family {
    return col === 'inputs' ? 'input' : 'output';
  }

  // ---- key / value families (metadata, inputs, outputs) -----------------------------------------

  private keyRef(family: Family, key: string, position: number): KeyRef {
    if (family === 'metadata') {
      const p = this.bind(key, 'String');
      return { exists: `mapContains(metadata, ${p})`, args: p };
    }
    const col = family === 'input' ? 'inputs' : 'outputs';
    // Dotted keys address nested objects: "a.b" -> JSONHas(inputs, 'a', 'b').
    const segments = key.split('.');
    if (segments.some((s) => s.length === 0)) {
      throw new FilterSyntaxError(`invalid key path '${key}'`, position);
    }
    const args = segments.map((s) => this.bind(s, 'String')).join(', ');
    return { exists: `JSONHas(${col}, ${args})`, args };
  }

  private keyStrings(node: FilterComparison): { key: string; position: number }[] {
    const value = node.value;
    const items = value.kind === 'array' ? value.items : [value];
    return items.map((item) => {
      if (item.kind !== 'string') {
        throw new FilterSyntaxError(`field '${node.field?.written ?? ''}' expects a string key, found ${describeKind(item)}`, item.position);
      }
      return { key: item.value, position: item.position };
    });
  }

  /** The accessor of the value stored under a key, typed by the literal it is compared with. */
  private valueOperand(family: Family, keyArgs: string, node: FilterComparison): Operand {
    const label = node.field?.written ?? `${family}_value`;
    const kind = this.valueKind(node);
    if (family === 'metadata') {
      const raw = `metadata[${keyArgs}]`;
      if (kind === 'number') return { sql: `toFloat64OrNull(${raw})`, type: 'Float64', nullable: true, label };
      return { sql: raw, type: 'String', nullable: false, label, booleansAsStrings: true };
    }
    const col = family === 'input' ? 'inputs' : 'outputs';
    if (kind === 'number') return { sql: `JSONExtract(${col}, ${keyArgs}, 'Nullable(Float64)')`, type: 'Float64', nullable: true, label };
    if (kind === 'boolean') return { sql: `JSONExtract(${col}, ${keyArgs}, 'Nullable(Bool)')`, type: 'Bool', nullable: true, label };
    return { sql: `JSONExtractString(${col}, ${keyArgs})`, type: 'String', nullable: false, label };
  }

  /** Same as valueOperand but over one element `x` of the map's / JSON object's values. */
  private elementOperand(family: Family, node: FilterComparison): Operand {
    const label = node.field?.written ?? `${family}_value`;
    const kind = this.valueKind(node);
    if (family === 'metadata') {
      if (kind === 'number') return { sql: 'toFloat64OrNull(v)', type: 'Float64', nullable: true, label };
      return { sql: 'v', type: 'String', nullable: false, label, booleansAsStrings: true };
    }
    if (kind === 'number') return { sql: `JSONExtract(kv.2, 'Nullable(Float64)')`, type: 'Float64', nullable: true, label };
    if (kind === 'boolean') return { sql: `JSONExtract(kv.2, 'Nullable(Bool)')`, type: 'Bool', nullable: true, label };
    return { sql: 'JSONExtractString(kv.2)', type: 'String', nullable: false, label };
  }

  private valueKind(node: FilterComparison): FilterScalarValue['kind'] {
    const v = node.value;
    const first = v.kind === 'array' ? v.items[0] : v;
    if (first.kind === 'null') {
      throw new FilterSyntaxError(`field '${node.field?.written ?? ''}' cannot be compared with null`, first.position);
    }
    if (TEXT_MATCH.includes(node.comparator) && first.kind !== 'string') {
      throw new FilterSyntaxError(`comparator '${node.comparator}' expects a string value, found ${describeKind(first)}`, first.position);
    }
    return first.kind;
  }

  private keyedPair(family: Family, keyNode: FilterComparison, valueNode: FilterComparison): string {
    const refs = this.keyStrings(keyNode).map((k) => this.keyRef(family, k.key, k.position));
    const probe = this.valueOperand(family, refs[0].args, valueNode);
    const rhs = this.rhs(probe, valueNode);
    const branches = refs.map((ref) => {
      const op = this.valueOperand(family, ref.args, valueNode);
      return `(${ref.exists} AND ${this.apply(op.sql, op.nullable, valueNode.comparator, rhs)})`;
    });
    return branches.length === 1 ? branches[0] : `(${branches.join(' OR ')})`;
  }

  private loneKey(family: Family, node: FilterComparison): string {
    const keyOp: Operand = { sql: 'k', type: 'String', nullable: false, label: node.field?.written ?? `${family}_key` };
    const keys = family === 'metadata' ? 'mapKeys(metadata)' : `JSONExtractKeys(${family === 'input' ? 'inputs' : 'outputs'})`;
    switch (node.comparator) {
      case 'eq': {
        const [k] = this.keyStrings(node);
        return this.keyRef(family, k.key, k.position).exists;
      }
      case 'in': {
        if (family === 'metadata') {
          const list = this.keyStrings(node).map((k) => k.key);
          return `hasAny(mapKeys(metadata), ${this.bind(list, 'Array(String)')})`;
        }
        return joinAll(
          this.keyStrings(node).map((k) => this.keyRef(family, k.key, k.position).exists),
          'OR',
        );
      }
      default:
        return `arrayExists(k -> ${this.compare(keyOp, node, false)}, ${keys})`;
    }
  }

  private loneValue(family: Family, node: FilterComparison): string {
    const op = this.elementOperand(family, node);
    if (family === 'metadata') {
      if (op.type === 'String' && node.comparator === 'eq') return `has(mapValues(metadata), ${this.rhsSql(op, node)})`;
      if (op.type === 'String' && node.comparator === 'in') return `hasAny(mapValues(metadata), ${this.rhsSql(op, node)})`;
      return `arrayExists(v -> ${this.compare(op, node, true)}, mapValues(metadata))`;
    }
    const col = family === 'input' ? 'inputs' : 'outputs';
    return `arrayExists(kv -> ${this.compare(op, node, true)}, JSONExtractKeysAndValuesRaw(${col}))`;
  }

  private rhsSql(op: Operand, node: FilterComparison): string {
    const rhs = this.rhs(op, node);
    if (rhs.kind === 'null') throw new FilterSyntaxError(`null is not allowed here`, node.value.position);
    return rhs.sql;
  }

  private scalar(value: FilterValue): FilterScalarValue {
    if (value.kind === 'array') throw new FilterSyntaxError(`an array value is only allowed with 'in'`, value.position);
    return value;
  }

  // ---- feedback -----------------------------------------------------------------------------------

  private feedbackSubquery(group: FilterComparison[]): string {
    const order = { key: 0, score: 1, value: 2 } as const;
    const sorted = group
      .map((c) => {
        const spec = this.spec(c);
        if (spec.kind !== 'feedback') throw new FilterSyntaxError('expected a feedback field', c.position);
        return { c, part: spec.part };
      })
      .sort((a, b) => order[a.part] - order[b.part]);
    const conds = sorted.map(({ c, part }) => {
      const op: Operand =
        part === 'score'
          ? { sql: 'score', type: 'Float64', nullable: true, label: 'feedback_score', booleansAsNumbers: true }
          : { sql: part, type: 'String', nullable: false, label: `feedback_${part}` };
      return this.compare(op, c, false);
    });
    this.usesFeedback = true;
    const { min, max } = this.opts.feedbackModifiedAt ?? {};
    if (min !== undefined) conds.push(`modified_at >= parseDateTime64BestEffort(${this.bind(min, 'String')}, 6, 'UTC')`);
    if (max !== undefined) conds.push(`modified_at < parseDateTime64BestEffort(${this.bind(max, 'String')}, 6, 'UTC')`);
    return (
      `id IN (SELECT run_id FROM feedback FINAL WHERE tenant_id = {${this.opts.tenantParam}:UUID} AND ` +
      `${conds.join(' AND ')} AND is_deleted = 0)`
    );
  }
}

/**
 * Compiles a filter expression to a parameterized ClickHouse boolean expression over `runs`.
 * User values only ever appear in `params`; the SQL text holds placeholders, whitelisted
 * column names and fixed function calls. Throws FilterSyntaxError for any invalid filter.
 * The caller binds `opts.tenantParam` (used by feedback subqueries).
 */
export function compileFilter(expr: string, opts: CompileFilterOptions): CompiledFilter {
  return compileFilterAst(parseFilter(expr), opts);
}

/** Compiles an already parsed filter (see parseFilter); same contract as compileFilter. */
export function compileFilterAst(ast: FilterNode, opts: CompileFilterOptions): CompiledFilter {
  if (!PARAM_NAME_RE.test(opts.paramPrefix) || !PARAM_NAME_RE.test(opts.tenantParam)) {
    throw new TypeError('compileFilter: paramPrefix and tenantParam must be identifiers ([A-Za-z_][A-Za-z0-9_]*)');
  }
  if (opts.tenantParam.startsWith(opts.paramPrefix) && /^\d+$/.test(opts.tenantParam.slice(opts.paramPrefix.length))) {
    throw new TypeError('compileFilter: tenantParam collides with the generated parameter names');
  }
  return new FilterCompiler(opts).compile(ast);
}
