import { FILTER_COMPARATORS, FILTER_FIELDS, FILTER_FIELD_ALIASES, FILTER_LOGICAL_OPERATORS, type FilterComparator, type FilterField } from '@th/contracts';
import { FilterSyntaxError } from './filter.errors';

export const MAX_FILTER_LENGTH = 10_000;
export const MAX_FILTER_DEPTH = 32;

export { FILTER_COMPARATORS, FILTER_FIELDS, FILTER_FIELD_ALIASES, FILTER_LOGICAL_OPERATORS } from '@th/contracts';
export type { FilterComparator, FilterField, FilterLogicalOperator } from '@th/contracts';

/** The fields an unknown field's message lists first: the ids a filter most often names. */
const LISTED_FIRST: readonly FilterField[] = ['id', 'trace_id', 'session_id'];
const LISTED_FIELDS = [...LISTED_FIRST, ...FILTER_FIELDS.filter((f) => !LISTED_FIRST.includes(f))];

export interface FilterStringValue {
  kind: 'string';
  value: string;
  position: number;
}
export interface FilterNumberValue {
  kind: 'number';
  value: number;
  position: number;
}
export interface FilterBooleanValue {
  kind: 'boolean';
  value: boolean;
  position: number;
}
export interface FilterNullValue {
  kind: 'null';
  position: number;
}
export type FilterScalarValue = FilterStringValue | FilterNumberValue | FilterBooleanValue | FilterNullValue;
export interface FilterArrayValue {
  kind: 'array';
  items: FilterScalarValue[];
  position: number;
}
export type FilterValue = FilterScalarValue | FilterArrayValue;

export interface FilterFieldRef {
  name: FilterField;
  /** The identifier as written (differs from `name` for aliases such as `tag`). */
  written: string;
  position: number;
}

export interface FilterComparison {
  type: 'comparison';
  comparator: FilterComparator;
  /** null only for the field-less form `search("text")`. */
  field: FilterFieldRef | null;
  value: FilterValue;
  position: number;
}
export interface FilterAnd {
  type: 'and';
  operands: FilterNode[];
  position: number;
}
export interface FilterOr {
  type: 'or';
  operands: FilterNode[];
  position: number;
}
export interface FilterNot {
  type: 'not';
  operand: FilterNode;
  position: number;
}
export type FilterNode = FilterComparison | FilterAnd | FilterOr | FilterNot;

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
const NUMBER_RE = /-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;
const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "'": "'",
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

function isComparator(name: string): name is FilterComparator {
  return (FILTER_COMPARATORS as readonly string[]).includes(name);
}

function isCanonicalField(name: string): name is FilterField {
  return (FILTER_FIELDS as readonly string[]).includes(name);
}

/** Resolves a written field name (canonical or alias) to its canonical name, or null if unknown. */
export function resolveFilterField(name: string): FilterField | null {
  if (isCanonicalField(name)) return name;
  return Object.prototype.hasOwnProperty.call(FILTER_FIELD_ALIASES, name) ? FILTER_FIELD_ALIASES[name] : null;
}

class Parser {
  private pos = 0;

  constructor(private readonly src: string) {}

  parse(): FilterNode {
    this.skipWs();
    if (this.pos >= this.src.length) this.fail('expected an expression but found end of input');
    const node = this.parseExpr(1);
    this.skipWs();
    if (this.pos < this.src.length) this.fail(`expected end of input but found ${this.describeHere()}`);
    return node;
  }

  private parseExpr(depth: number): FilterNode {
    const start = this.pos;
    const c = this.src[this.pos];
    if (c === undefined || !IDENT_START.test(c)) {
      this.fail(`expected an expression (e.g. eq(field, value)) but found ${this.describeHere()}`);
    }
    const name = this.readIdent();
    if (depth > MAX_FILTER_DEPTH) {
      throw new FilterSyntaxError(`filter exceeds the maximum nesting depth of ${MAX_FILTER_DEPTH}`, start);
    }
    const isLogical = (FILTER_LOGICAL_OPERATORS as readonly string[]).includes(name);
    if (!isLogical && !isComparator(name)) {
      throw new FilterSyntaxError(
        `unknown operator '${name}'; expected one of ${[...FILTER_LOGICAL_OPERATORS, ...FILTER_COMPARATORS].join(', ')}`,
        start,
      );
    }
    this.skipWs();
    this.expectChar('(', `after '${name}'`);
    this.skipWs();

    if (name === 'and' || name === 'or') {
      if (this.peek() === ')') throw new FilterSyntaxError(`'${name}' expects at least 1 argument`, this.pos);
      const operands: FilterNode[] = [this.parseExpr(depth + 1)];
      this.skipWs();
      while (this.peek() === ',') {
        this.pos++;
        this.skipWs();
        operands.push(this.parseExpr(depth + 1));
        this.skipWs();
      }
      this.expectChar(')', `to close '${name}('`);
      return name === 'and' ? { type: 'and', operands, position: start } : { type: 'or', operands, position: start };
    }
    if (name === 'not') {
      if (this.peek() === ')') throw new FilterSyntaxError(`'not' expects exactly 1 argument`, this.pos);
      const operand = this.parseExpr(depth + 1);
      this.skipWs();
      if (this.peek() === ',') throw new FilterSyntaxError(`'not' expects exactly 1 argument`, this.pos);
      this.expectChar(')', `to close 'not('`);
      return { type: 'not', operand, position: start };
    }
    if (!isComparator(name)) throw new FilterSyntaxError(`unknown operator '${name}'`, start);
    return this.parseComparison(name, start);
  }

  private parseComparison(comparator: FilterComparator, start: number): FilterComparison {
    const arity = comparator === 'search' ? '1 or 2 arguments ([field,] value)' : '2 arguments (field, value)';
    if (this.peek() === ')') throw new FilterSyntaxError(`'${comparator}' expects ${arity}, got 0`, this.pos);

    let field: FilterFieldRef | null = null;
    const c = this.peek();
    if (c !== undefined && IDENT_START.test(c) && !this.atKeywordValue()) {
      field = this.parseField();
      this.skipWs();
      if (this.peek() === ')') {
        const detail =
          comparator === 'search'
            ? `'search' with a field expects a value: search(${field.written}, "text")`
            : `'${comparator}' expects ${arity}, got 1`;
        throw new FilterSyntaxError(detail, this.pos);
      }
      this.expectChar(',', `after the field name`);
      this.skipWs();
    } else if (comparator !== 'search') {
      this.fail(`expected a field name as the first argument of '${comparator}' but found ${this.describeHere()}`);
    }

    const value = this.parseValue();
    this.skipWs();
    if (this.peek() === ',') {
      throw new FilterSyntaxError(`'${comparator}' expects ${arity}, got more`, this.pos);
    }
    this.expectChar(')', `to close '${comparator}('`);

    if (comparator === 'in') {
      if (value.kind !== 'array') {
        throw new FilterSyntaxError(`'in' expects an array value like ["a", "b"]`, value.position);
      }
      if (value.items.length === 0) {
        throw new FilterSyntaxError(`'in' expects a non-empty array`, value.position);
      }
    } else if (value.kind === 'array') {
      throw new FilterSyntaxError(`an array value is only allowed with 'in', not '${comparator}'`, value.position);
    }
    return { type: 'comparison', comparator, field, value, position: start };
  }

  private parseField(): FilterFieldRef {
    const position = this.pos;
    const written = this.readIdent();
    const name = resolveFilterField(written);
    if (name === null) {
      throw new FilterSyntaxError(
        `unknown field '${written}'; expected one of ${[...LISTED_FIELDS, ...Object.keys(FILTER_FIELD_ALIASES)].join(', ')}`,
        position,
      );
    }
    return { name, written, position };
  }

  private parseValue(): FilterValue {
    const c = this.peek();
    if (c === '[') return this.parseArray();
    return this.parseScalar();
  }

  private parseArray(): FilterArrayValue {
    const position = this.pos;
    this.pos++;
    this.skipWs();
    const items: FilterScalarValue[] = [];
    if (this.peek() === ']') {
      this.pos++;
      return { kind: 'array', items, position };
    }
    for (;;) {
      if (this.peek() === '[') this.fail('nested arrays are not allowed');
      items.push(this.parseScalar());
      this.skipWs();
      const c = this.peek();
      if (c === ',') {
        this.pos++;
        this.skipWs();
        continue;
      }
      if (c === ']') {
        this.pos++;
        return { kind: 'array', items, position };
      }
      this.fail(`expected ',' or ']' in array but found ${this.describeHere()}`);
    }
  }

  private parseScalar(): FilterScalarValue {
    const position = this.pos;
    const c = this.peek();
    if (c === '"' || c === "'") return { kind: 'string', value: this.readString(), position };
    if (c !== undefined && (c === '-' || c === '.' || (c >= '0' && c <= '9'))) {
      return { kind: 'number', value: this.readNumber(), position };
    }
    if (c !== undefined && IDENT_START.test(c)) {
      const word = this.readIdent();
      if (word === 'true') return { kind: 'boolean', value: true, position };
      if (word === 'false') return { kind: 'boolean', value: false, position };
      if (word === 'null') return { kind: 'null', position };
      throw new FilterSyntaxError(
        `expected a value (quoted string, number, true, false, null or array) but found '${word}'; quote string values`,
        position,
      );
    }
    this.fail(`expected a value (quoted string, number, true, false, null or array) but found ${this.describeHere()}`);
  }

  private readString(): string {
    const start = this.pos;
    const quote = this.src[this.pos];
    this.pos++;
    let out = '';
    for (;;) {
      const c = this.src[this.pos];
      if (c === undefined) throw new FilterSyntaxError('unterminated string literal', start);
      if (c === quote) {
        this.pos++;
        return out;
      }
      if (c !== '\\') {
        out += c;
        this.pos++;
        continue;
      }
      const escPos = this.pos;
      const e = this.src[this.pos + 1];
      if (e === undefined) throw new FilterSyntaxError('unterminated string literal', start);
      if (e === 'u') {
        const hex = this.src.slice(this.pos + 2, this.pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
          throw new FilterSyntaxError(`invalid unicode escape; expected \\u followed by 4 hex digits`, escPos);
        }
        out += String.fromCharCode(parseInt(hex, 16));
        this.pos += 6;
        continue;
      }
      const mapped = Object.prototype.hasOwnProperty.call(SIMPLE_ESCAPES, e) ? SIMPLE_ESCAPES[e] : undefined;
      if (mapped === undefined) {
        throw new FilterSyntaxError(`invalid escape sequence '\\${e}'`, escPos);
      }
      out += mapped;
      this.pos += 2;
    }
  }

  private readNumber(): number {
    const start = this.pos;
    NUMBER_RE.lastIndex = start;
    const m = NUMBER_RE.exec(this.src);
    if (m === null) this.fail(`expected a number but found ${this.describeHere()}`);
    const end = start + m[0].length;
    const next = this.src[end];
    if (next !== undefined && (IDENT_PART.test(next) || next === '.')) {
      throw new FilterSyntaxError(`invalid number literal`, start);
    }
    const value = Number(m[0]);
    if (!Number.isFinite(value)) throw new FilterSyntaxError('number literal is out of range', start);
    this.pos = end;
    return value;
  }

  private readIdent(): string {
    const start = this.pos;
    while (this.pos < this.src.length && IDENT_PART.test(this.src[this.pos])) this.pos++;
    return this.src.slice(start, this.pos);
  }

  /** true/false/null in first-argument position are values, so `search(true)` reports a type error, not an unknown field. */
  private atKeywordValue(): boolean {
    const m = /^(true|false|null)(?![A-Za-z0-9_])/.exec(this.src.slice(this.pos, this.pos + 6));
    return m !== null;
  }

  private skipWs(): void {
    while (this.pos < this.src.length && /[ \t\n\r\f\v]/.test(this.src[this.pos])) this.pos++;
  }

  private peek(): string | undefined {
    return this.src[this.pos];
  }

  private expectChar(ch: string, context: string): void {
    if (this.src[this.pos] !== ch) this.fail(`expected '${ch}' ${context} but found ${this.describeHere()}`);
    this.pos++;
  }

  private describeHere(): string {
    if (this.pos >= this.src.length) return 'end of input';
    const c = this.src[this.pos];
    if (IDENT_START.test(c)) {
      let end = this.pos;
      while (end < this.src.length && IDENT_PART.test(this.src[end])) end++;
      return `'${this.src.slice(this.pos, end)}'`;
    }
    return `'${c}'`;
  }

  private fail(detail: string): never {
    throw new FilterSyntaxError(detail, this.pos);
  }
}

/**
 * Parses a LangSmith-style filter expression (`and(eq(run_type, "llm"), gt(latency, 2))`) into an AST.
 * Checks syntax, operator and field names, arity and value shape (arrays only with `in`); type
 * compatibility between field and value is checked by the compiler.
 */
export function parseFilter(expr: string): FilterNode {
  if (typeof expr !== 'string') throw new FilterSyntaxError('filter must be a string', 0);
  if (expr.length > MAX_FILTER_LENGTH) {
    throw new FilterSyntaxError(`filter exceeds the maximum length of ${MAX_FILTER_LENGTH} characters`, MAX_FILTER_LENGTH);
  }
  return new Parser(expr).parse();
}
