import { BACKSLASH, CLOSE_BRACE, CLOSE_BRACKET, OPEN_BRACE, OPEN_BRACKET, QUOTE } from '@th/platform';

const COMMA = 0x2c;
const COLON = 0x3a;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(t: string, i: number): number {
  while (i < t.length && isSpace(t.charCodeAt(i))) i++;
  return i;
}

/** Index just past the string starting at `i` (a quote). */
function stringEnd(t: string, i: number): number {
  for (let j = i + 1; j < t.length; j++) {
    const c = t.charCodeAt(j);
    if (c === BACKSLASH) j++;
    else if (c === QUOTE) return j + 1;
  }
  return t.length;
}

/** Index just past the value starting at `i`. */
function valueEnd(t: string, i: number): number {
  const c = t.charCodeAt(i);
  if (c === QUOTE) return stringEnd(t, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    for (let j = i; j < t.length; j++) {
      const d = t.charCodeAt(j);
      if (d === QUOTE) j = stringEnd(t, j) - 1;
      else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if ((d === CLOSE_BRACE || d === CLOSE_BRACKET) && --depth === 0) return j + 1;
    }
    return t.length;
  }
  let j = i;
  while (j < t.length) {
    const d = t.charCodeAt(j);
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET || isSpace(d)) break;
    j++;
  }
  return j;
}

/**
 * The exact text of member `key` of the JSON object `text` (the last one when the key repeats, as JSON.parse keeps),
 * or null. One linear pass; `text` must be JSON that parsed (the body the route already read).
 */
export function memberText(text: string, key: string): string | null {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return null;
  let found: string | null = null;
  i = skipSpace(text, i + 1);
  while (i < text.length && text.charCodeAt(i) === QUOTE) {
    const keyEnd = stringEnd(text, i);
    const name = JSON.parse(text.slice(i, keyEnd)) as string;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) return null;
    const start = skipSpace(text, i + 1);
    const end = valueEnd(text, start);
    if (name === key) found = text.slice(start, end);
    i = skipSpace(text, end);
    if (text.charCodeAt(i) !== COMMA) break;
    i = skipSpace(text, i + 1);
  }
  return found;
}
