import { EventLoopPacer } from './pacer';
import { markStorable } from './storable-marks';
import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE } from './json-depth';

/**
 * A large JSON body parsed in pieces: a worker validates the whole text and cuts it into a plan (below), and
 * the main thread builds the value piece by piece, giving the event loop way between slices. One JSON.parse
 * of 25 MB holds the event loop for 100-200 ms; a piece of at most JSON_PIECE_BYTES takes well under 1 ms.
 *
 * The plan is a flat Int32Array of records of PLAN_STRIDE ints: [op, keyStart, keyEnd, valueStart, valueEnd],
 * byte offsets into the UTF-8 body. keyStart is -1 outside objects; a key is its quoted token.
 */
export const PLAN_STRIDE = 5;
export const PLAN_LEAF = 0;
export const PLAN_OPEN_OBJECT = 1;
export const PLAN_OPEN_ARRAY = 2;
export const PLAN_CLOSE = 3;

/** Containers larger than this are cut into their members; anything smaller is one JSON.parse. */
export const JSON_PIECE_BYTES = 64 * 1024;

const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The index after the closing quote of the string that opens at `pos`. */
function stringEnd(b: Buffer, pos: number): number {
  let j = pos;
  for (;;) {
    j = b.indexOf(QUOTE, j + 1);
    if (j < 0) return b.length;
    let k = j - 1;
    while (b[k] === BACKSLASH) k--;
    if ((j - 1 - k) % 2 === 0) return j + 1;
  }
}

/**
 * The plan of a body that JSON.parse has accepted (it is not validated again) and that nests no deeper than
 * `maxDepth`. Two passes: the first finds the containers worth cutting (at least `pieceBytes`), the second
 * walks only into those, so every byte is scanned a bounded number of times whatever the nesting.
 */
export function jsonPlan(b: Buffer, maxDepth: number, pieceBytes = JSON_PIECE_BYTES): Int32Array {
  const n = b.length;
  const big = new Map<number, number>();
  const open = new Int32Array(maxDepth + 2);
  let depth = 0;
  for (let i = 0; i < n; i++) {
    const c = b[i];
    if (c === QUOTE) i = stringEnd(b, i) - 1;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) open[depth++] = i;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      const start = open[--depth];
      if (i + 1 - start >= pieceBytes) big.set(start, i + 1);
    }
  }

  let plan = new Int32Array(PLAN_STRIDE * 64);
  let used = 0;
  const push = (op: number, ks: number, ke: number, vs: number, ve: number) => {
    if (used + PLAN_STRIDE > plan.length) {
      const grown = new Int32Array(plan.length * 2);
      grown.set(plan);
      plan = grown;
    }
    plan[used++] = op;
    plan[used++] = ks;
    plan[used++] = ke;
    plan[used++] = vs;
    plan[used++] = ve;
  };
  const skipSpace = (i: number) => {
    while (i < n && isSpace(b[i])) i++;
    return i;
  };
  // The end of a value that is not cut: a string, a small container or a literal.
  const valueEnd = (pos: number): number => {
    const c = b[pos];
    if (c === QUOTE) return stringEnd(b, pos);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      let d = 0;
      for (let i = pos; i < n; i++) {
        const x = b[i];
        if (x === QUOTE) i = stringEnd(b, i) - 1;
        else if (x === OPEN_BRACE || x === OPEN_BRACKET) d++;
        else if ((x === CLOSE_BRACE || x === CLOSE_BRACKET) && --d === 0) return i + 1;
      }
      return n;
    }
    let i = pos;
    while (i < n && !isSpace(b[i]) && b[i] !== COMMA && b[i] !== CLOSE_BRACE && b[i] !== CLOSE_BRACKET) i++;
    return i;
  };
  const emit = (pos: number, ks: number, ke: number): number => {
    const end = big.get(pos);
    if (end === undefined) {
      const e = valueEnd(pos);
      push(PLAN_LEAF, ks, ke, pos, e);
      return e;
    }
    const isObject = b[pos] === OPEN_BRACE;
    push(isObject ? PLAN_OPEN_OBJECT : PLAN_OPEN_ARRAY, ks, ke, pos, end);
    let i = skipSpace(pos + 1);
    while (b[i] !== CLOSE_BRACE && b[i] !== CLOSE_BRACKET) {
      let mks = -1;
      let mke = -1;
      if (isObject) {
        mks = i;
        mke = stringEnd(b, i);
        i = skipSpace(mke);
        if (b[i] === COLON) i = skipSpace(i + 1);
      }
      i = skipSpace(emit(i, mks, mke));
      if (b[i] === COMMA) i = skipSpace(i + 1);
    }
    push(PLAN_CLOSE, -1, -1, i, i + 1);
    return end;
  };
  emit(skipSpace(0), -1, -1);
  return plan.subarray(0, used);
}

/** obj[key] = value as JSON.parse sets it: "__proto__" is an own property, not the prototype. */
function setMember(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

/**
 * The value of a body from its plan (see jsonPlan), built on this thread in slices of the pacer's length.
 * `storable`: the worker found the text free of unstorable strings, so its objects are marked (storable-marks.ts).
 */
export async function parseByPlan(b: Buffer, plan: Int32Array, pacer = new EventLoopPacer(), storable = false): Promise<unknown> {
  const stack: (Record<string, unknown> | unknown[])[] = [];
  let root: unknown;
  for (let i = 0; i < plan.length; i += PLAN_STRIDE) {
    if (pacer.due()) await pacer.yield();
    const op = plan[i];
    if (op === PLAN_CLOSE) {
      stack.pop();
      continue;
    }
    const value = op === PLAN_LEAF ? JSON.parse(b.toString('utf8', plan[i + 3], plan[i + 4])) : op === PLAN_OPEN_OBJECT ? {} : [];
    if (storable) markStorable(value, stack.length);
    const parent = stack[stack.length - 1];
    if (parent === undefined) root = value;
    else if (Array.isArray(parent)) parent.push(value);
    else setMember(parent, JSON.parse(b.toString('utf8', plan[i + 1], plan[i + 2])) as string, value);
    if (op !== PLAN_LEAF) stack.push(value as Record<string, unknown> | unknown[]);
  }
  return root;
}
