import { EventLoopPacer } from './pacer';

/** Values this many nodes or larger are serialized a member at a time; smaller ones in one JSON.stringify. */
export const JSON_TEXT_SPLIT_NODES = 4096;

const texts = new WeakMap<object, string>();

/** True when `v` holds at least `limit` values (itself, members, their members...); stops counting there. */
function hasNodes(v: object, limit: number): boolean {
  const stack: unknown[] = [v];
  let n = 0;
  while (stack.length > 0) {
    const x = stack.pop();
    if (++n >= limit) return true;
    if (typeof x !== 'object' || x === null) continue;
    if (Array.isArray(x)) for (let i = 0; i < x.length; i++) stack.push(x[i]);
    else for (const k in x) if (Object.prototype.hasOwnProperty.call(x, k)) stack.push((x as Record<string, unknown>)[k]);
  }
  return false;
}

const isPlain = (v: unknown): v is object =>
  typeof v === 'object' && v !== null && typeof (v as { toJSON?: unknown }).toJSON !== 'function';

/** JSON.stringify(v), built a member at a time for a large value, giving the event loop way between slices. */
async function textOf(v: unknown, pacer: EventLoopPacer): Promise<string | undefined> {
  if (pacer.due()) await pacer.yield();
  if (!isPlain(v) || !hasNodes(v, JSON_TEXT_SPLIT_NODES)) return JSON.stringify(v);
  const parts: string[] = [];
  if (Array.isArray(v)) {
    for (const item of v) parts.push((await textOf(item, pacer)) ?? 'null');
    return `[${parts.join(',')}]`;
  }
  for (const k of Object.keys(v)) {
    const t = await textOf((v as Record<string, unknown>)[k], pacer);
    if (t !== undefined) parts.push(`${JSON.stringify(k)}:${t}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * Serializes a large value ahead of a synchronous writer, in slices (one JSON.stringify of 25 MB of runs' inputs
 * held the event loop for hundreds of milliseconds); the writer then takes the text from jsonTextOf. Small values
 * are left alone: the writer's own JSON.stringify is cheaper for them. The text is what JSON.stringify returns.
 */
export async function prepareJsonText(v: unknown, pacer: EventLoopPacer): Promise<void> {
  if (!isPlain(v) || texts.has(v) || !hasNodes(v, JSON_TEXT_SPLIT_NODES)) return;
  const text = await textOf(v, pacer);
  if (text !== undefined) texts.set(v, text);
}

/** The text prepareJsonText made for `v`, or undefined. */
export function jsonTextOf(v: unknown): string | undefined {
  return typeof v === 'object' && v !== null ? texts.get(v) : undefined;
}

const encoded = new WeakMap<object, Buffer>();

/**
 * As prepareJsonText, but keeps the UTF-8 bytes (jsonBytesOf): a writer that needs bytes then copies them, where
 * encoding a 25 MB text at once held the event loop for some 40 ms.
 */
export async function prepareJsonBytes(v: unknown, pacer: EventLoopPacer): Promise<void> {
  if (!isPlain(v) || encoded.has(v) || !hasNodes(v, JSON_TEXT_SPLIT_NODES)) return;
  const parts: string[] = [];
  await fragments(v, pacer, parts);
  encoded.set(v, await utf8Bytes(parts, pacer));
}

/** The bytes prepareJsonBytes made for `v`, or undefined. */
export function jsonBytesOf(v: unknown): Buffer | undefined {
  return typeof v === 'object' && v !== null ? encoded.get(v) : undefined;
}

/** True when `v` is an object large enough for jsonBytes to serialize in slices. */
export function isLargeJson(v: unknown): v is object {
  return isPlain(v) && hasNodes(v, JSON_TEXT_SPLIT_NODES);
}

/** JSON.stringify's fragments of `v`, in order, a member at a time for large values. */
async function fragments(v: object, pacer: EventLoopPacer, out: string[]): Promise<void> {
  let first = true;
  const member = async (x: unknown, key: string | null): Promise<void> => {
    if (pacer.due()) await pacer.yield();
    const large = isLargeJson(x);
    const text = large ? undefined : JSON.stringify(x);
    // As JSON.stringify: a member whose value has no JSON form is left out, an array item becomes null.
    if (!large && text === undefined && key !== null) return;
    if (!first) out.push(',');
    first = false;
    if (key !== null) out.push(`${JSON.stringify(key)}:`);
    if (large) await fragments(x as object, pacer, out);
    else out.push(text ?? 'null');
  };
  const isArray = Array.isArray(v);
  out.push(isArray ? '[' : '{');
  if (isArray) for (const item of v) await member(item, null);
  else for (const k of Object.keys(v)) await member((v as Record<string, unknown>)[k], k);
  out.push(isArray ? ']' : '}');
}

/** UTF-8 is encoded this many characters at a time. */
const ENCODE_CHARS = 256 * 1024;

/** The UTF-8 bytes of `parts` joined, encoded a group of parts at a time with the event loop given way between. */
export async function utf8Bytes(parts: readonly string[], pacer = new EventLoopPacer()): Promise<Buffer> {
  const buffers: Buffer[] = [];
  let group: string[] = [];
  let chars = 0;
  const flush = () => {
    buffers.push(Buffer.from(group.join(''), 'utf8'));
    group = [];
    chars = 0;
  };
  for (const p of parts) {
    group.push(p);
    chars += p.length;
    if (chars >= ENCODE_CHARS) {
      flush();
      if (pacer.due()) await pacer.yield();
    }
  }
  if (group.length > 0) flush();
  if (buffers.length === 1) return buffers[0];
  // Joined a group at a time too: one copy of 25 MB into new memory (its page faults included) took some 40 ms.
  const out = Buffer.allocUnsafe(buffers.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of buffers) {
    if (pacer.due()) await pacer.yield();
    at += b.copy(out, at);
  }
  return out;
}

/**
 * The UTF-8 bytes of JSON.stringify(v), made in slices of the pacer's length: for a large answer (a bulk
 * write that returns what it stored), whose single JSON.stringify and encoding held the event loop for
 * hundreds of milliseconds.
 */
export async function jsonBytes(v: unknown, pacer = new EventLoopPacer()): Promise<Buffer> {
  if (!isLargeJson(v)) return Buffer.from(JSON.stringify(v) ?? '', 'utf8');
  const parts: string[] = [];
  await fragments(v, pacer, parts);
  return utf8Bytes(parts, pacer);
}

/** Strings this long are quoted in pieces by jsonStringParts. */
export const JSON_STRING_PIECE_CHARS = 256 * 1024;

/**
 * JSON.stringify(s) as parts to join (or to encode with utf8Bytes), a piece at a time with the event loop given
 * way between: the quoting of a 25 MB string is one call of tens of milliseconds. Pieces never split a surrogate
 * pair (JSON.stringify would write each half as an escape).
 */
export async function jsonStringParts(s: string, pacer = new EventLoopPacer()): Promise<string[]> {
  if (s.length <= JSON_STRING_PIECE_CHARS) return [JSON.stringify(s)];
  const parts = ['"'];
  for (let at = 0; at < s.length; ) {
    if (pacer.due()) await pacer.yield();
    let end = Math.min(s.length, at + JSON_STRING_PIECE_CHARS);
    const last = s.charCodeAt(end - 1);
    if (end < s.length && last >= 0xd800 && last <= 0xdbff) end++;
    const quoted = JSON.stringify(s.slice(at, end));
    parts.push(quoted.slice(1, -1));
    at = end;
  }
  parts.push('"');
  return parts;
}
