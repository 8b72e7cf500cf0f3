/**
 * Query parameters written into the SQL as typed literals, for the in-process engine.
 *
 * chDB runs every parameterized query of the process one after another (a single process-wide chain,
 * which advances only when the previous query's completion has reached the JS thread), while queries
 * without parameters run in parallel. In standalone every read (the writer's lookups, GET /runs/{id},
 * list and stats queries) would queue behind the others. So for chDB each `{name:Type}` placeholder
 * becomes `CAST(<literal> AS Type)` (a plain quoted literal for String): the same type, the same
 * conversion errors, and the value can never leave its literal (quotes and backslashes are escaped).
 * The HTTP form keeps server-side binding.
 */

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^{}]+?)\s*\}/g;

/** A ClickHouse string literal: backslash escapes for the backslash, the quote and control bytes. */
export function quoteString(s: string): string {
  let out = "'";
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | null = null;
    if (c === 0x27) esc = "\\'";
    else if (c === 0x5c) esc = '\\\\';
    else if (c === 0x0a) esc = '\\n';
    else if (c === 0x0d) esc = '\\r';
    else if (c === 0x09) esc = '\\t';
    else if (c === 0x00) esc = '\\0';
    if (esc !== null) {
      out += s.slice(from, i) + esc;
      from = i + 1;
    }
  }
  return `${out}${s.slice(from)}'`;
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** The value as a ClickHouse literal (the form chDB's own binder sends for it). */
function literal(value: unknown, where: string): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'string') return quoteString(value);
  if (typeof value === 'number') {
    // Quoted, so the target type parses it (1e+21, NaN and -0 included) as the binder's text would be.
    return quoteString(String(value));
  }
  if (typeof value === 'bigint') return quoteString(value.toString());
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) {
    const d = value;
    return quoteString(
      `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`,
    );
  }
  if (Array.isArray(value)) return `[${value.map((v, i) => literal(v, `${where}[${i}]`)).join(',')}]`;
  throw new Error(`query parameter ${where}: unsupported value of type ${typeof value}`);
}

/** A typed literal for the placeholder: a String as its quoted text, anything else under CAST to the type. */
function typedLiteral(value: unknown, type: string, name: string): string {
  if (type === 'String' && typeof value === 'string') return quoteString(value);
  return `CAST(${literal(value, name)} AS ${type})`;
}

/**
 * The SQL with every placeholder whose name is in `params` replaced by its typed literal. Placeholders
 * without a value are left as they are (the engine then reports the missing parameter, as before).
 */
export function inlineParams(sql: string, params: Record<string, unknown>): string {
  return sql.replace(PLACEHOLDER, (whole, name: string, type: string) =>
    Object.prototype.hasOwnProperty.call(params, name) ? typedLiteral(params[name], type, name) : whole,
  );
}
