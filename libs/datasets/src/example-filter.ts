import { ValidationFailed } from '@th/platform';

/**
 * LangSmith's filter language over examples, compiled to PostgreSQL with bound parameters. Supported:
 *   eq|neq|gt|gte|lt|lte(<field>, <value>)   field: metadata.<key>[.<key>…], inputs.<key>…, outputs.<key>…
 *   has(metadata|inputs|outputs, '<json>')   JSON containment
 *   exists(metadata|inputs|outputs, "<key>") the top-level key is present (even with a null value)
 *   and(…), or(…), not(…)
 * Values: "…" or '…' strings (backslash escapes), numbers, true, false, null. `metadata.dataset_split` holds the
 * example's splits (as the API shows them). eq on a field holding an array matches when the array contains the
 * value; neq matches when eq does not (also when the key is absent). gt/gte/lt/lte compare numbers with numbers
 * and strings with strings (byte order); other combinations do not match. Anything else is a 422.
 */

type Value = string | number | boolean | null;
type Node =
  | { kind: 'call'; name: string; args: Node[]; pos: number }
  | { kind: 'field'; path: string[]; pos: number }
  | { kind: 'value'; value: Value; pos: number };

const MAX_LENGTH = 10_000;
const MAX_DEPTH = 32;
const MAX_NODES = 500;
const ROOTS = new Set(['metadata', 'inputs', 'outputs']);
const COMPARISONS: Record<string, string> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };

function fail(msg: string): never {
  throw new ValidationFailed([{ loc: ['query', 'filter'], msg, type: 'value_error' }]);
}

class Parser {
  private i = 0;
  private nodes = 0;
  constructor(private readonly s: string) {}

  parse(): Node {
    const n = this.expr(0);
    this.ws();
    if (this.i < this.s.length) fail(`unexpected "${this.s[this.i]}" at position ${this.i}`);
    return n;
  }

  private ws(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i])) this.i++;
  }

  private expr(depth: number): Node {
    if (depth > MAX_DEPTH) fail(`filter is nested deeper than ${MAX_DEPTH} levels`);
    if (++this.nodes > MAX_NODES) fail(`filter has more than ${MAX_NODES} terms`);
    this.ws();
    const pos = this.i;
    const c = this.s[this.i];
    if (c === undefined) fail('unexpected end of filter');
    if (c === '"' || c === "'") return { kind: 'value', value: this.string(c), pos };
    const num = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(this.s.slice(this.i));
    if (num) {
      this.i += num[0].length;
      return { kind: 'value', value: Number(num[0]), pos };
    }
    const ident = /^[A-Za-z_][\w-]*(?:\.[\w-]+)*/.exec(this.s.slice(this.i));
    if (!ident) fail(`unexpected "${c}" at position ${pos}`);
    this.i += ident[0].length;
    this.ws();
    if (this.s[this.i] === '(') {
      if (ident[0].includes('.')) fail(`"${ident[0]}" is not a function (position ${pos})`);
      this.i++;
      const args: Node[] = [];
      this.ws();
      if (this.s[this.i] === ')') this.i++;
      else {
        for (;;) {
          args.push(this.expr(depth + 1));
          this.ws();
          const d = this.s[this.i++];
          if (d === ')') break;
          if (d !== ',') fail(`expected "," or ")" at position ${this.i - 1}`);
        }
      }
      return { kind: 'call', name: ident[0], args, pos };
    }
    if (ident[0] === 'true' || ident[0] === 'false') return { kind: 'value', value: ident[0] === 'true', pos };
    if (ident[0] === 'null') return { kind: 'value', value: null, pos };
    return { kind: 'field', path: ident[0].split('.'), pos };
  }

  private string(quote: string): string {
    let out = '';
    this.i++;
    while (this.i < this.s.length) {
      const c = this.s[this.i++];
      if (c === quote) return out;
      if (c === '\\') {
        const e = this.s[this.i++];
        if (e === undefined) break;
        out += e === 'n' ? '\n' : e === 't' ? '\t' : e;
      } else out += c;
    }
    return fail('unterminated string in filter');
  }
}

/** The SQL of a filter over examples aliased `e`; values are appended to `params` and referenced as $n. */
export function compileExampleFilter(filter: string, params: unknown[]): string {
  if (filter.length > MAX_LENGTH) fail(`filter is longer than ${MAX_LENGTH} characters`);
  if (filter.trim() === '') fail('filter is empty');
  const bind = (v: unknown): string => {
    params.push(v);
    return `$${params.length}`;
  };
  const root = (name: string, pos: number): string => {
    if (name === 'metadata') return `(coalesce(e.metadata, '{}'::jsonb) || jsonb_build_object('dataset_split', to_jsonb(e.splits)))`;
    if (name === 'inputs') return 'e.inputs';
    if (name === 'outputs') return `coalesce(e.outputs, '{}'::jsonb)`;
    return fail(`unsupported field "${name}" at position ${pos}: filters work on metadata, inputs and outputs`);
  };
  /** The first argument of has() and exists(): metadata, inputs or outputs, bare or quoted (the Python SDK writes has("metadata", '{...}')). */
  const rootArg = (n: Node, fn: string): string => {
    if (n.kind === 'field' && n.path.length === 1) return root(n.path[0], n.pos);
    if (n.kind === 'value' && typeof n.value === 'string' && ROOTS.has(n.value)) return root(n.value, n.pos);
    return fail(`${fn}() takes metadata, inputs or outputs first (position ${n.pos})`);
  };
  const field = (n: Node): string => {
    if (n.kind !== 'field' || n.path.length < 2 || !ROOTS.has(n.path[0])) {
      return fail(`expected a field like metadata.<key> at position ${n.pos}`);
    }
    return `(${root(n.path[0], n.pos)} #> ${bind(n.path.slice(1))}::text[])`;
  };
  const value = (n: Node): Value => (n.kind === 'value' ? n.value : fail(`expected a value at position ${n.pos}`));
  const arity = (n: Node & { kind: 'call' }, count: number) => {
    if (n.args.length !== count) fail(`${n.name}() takes ${count} arguments (position ${n.pos})`);
  };

  const compile = (n: Node): string => {
    if (n.kind !== 'call') return fail(`expected a function call like eq(metadata.key, "value") at position ${n.pos}`);
    switch (n.name) {
      case 'and':
      case 'or':
        if (n.args.length === 0) fail(`${n.name}() needs at least one argument (position ${n.pos})`);
        return `(${n.args.map(compile).join(n.name === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        arity(n, 1);
        return `(NOT coalesce(${compile(n.args[0])}, false))`;
      case 'eq':
      case 'neq': {
        arity(n, 2);
        const x = field(n.args[0]);
        const v = bind(JSON.stringify(value(n.args[1])));
        const eq = `coalesce(${x} = ${v}::jsonb OR (jsonb_typeof(${x}) = 'array' AND ${x} @> jsonb_build_array(${v}::jsonb)), false)`;
        return n.name === 'eq' ? `(${eq})` : `(NOT ${eq})`;
      }
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte': {
        arity(n, 2);
        const x = field(n.args[0]);
        const v = value(n.args[1]);
        const op = COMPARISONS[n.name];
        if (typeof v === 'number') return `coalesce(CASE WHEN jsonb_typeof(${x}) = 'number' THEN (${x})::numeric ${op} ${bind(v)}::numeric END, false)`;
        if (typeof v === 'string') return `coalesce(CASE WHEN jsonb_typeof(${x}) = 'string' THEN (${x} #>> '{}') COLLATE "C" ${op} ${bind(v)}::text END, false)`;
        return fail(`${n.name}() compares with a number or a string (position ${n.args[1].pos})`);
      }
      case 'has': {
        arity(n, 2);
        const target = rootArg(n.args[0], 'has');
        const raw = value(n.args[1]);
        let parsed: unknown;
        try {
          parsed = typeof raw === 'string' ? JSON.parse(raw) : raw;
        } catch {
          fail(`has() needs a JSON value (position ${n.args[1].pos})`);
        }
        return `(${target} @> ${bind(JSON.stringify(parsed))}::jsonb)`;
      }
      case 'exists': {
        arity(n, 2);
        const target = rootArg(n.args[0], 'exists');
        const key = value(n.args[1]);
        if (typeof key !== 'string') fail(`exists() needs a key string (position ${n.args[1].pos})`);
        return `((${target} -> ${bind(key)}::text) IS NOT NULL)`;
      }
      default:
        return fail(`unsupported filter function "${n.name}" at position ${n.pos}; supported: eq, neq, gt, gte, lt, lte, has, exists, and, or, not`);
    }
  };
  return compile(new Parser(filter).parse());
}
