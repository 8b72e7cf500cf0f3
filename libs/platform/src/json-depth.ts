/**
 * The deepest nesting of arrays and objects accepted in a JSON document from a client (a request body, a
 * multipart part, a JSON-encoded attribute). Every request body is checked before it is parsed, so a 2xx is never
 * given for a value the write path cannot serialize (JSON.stringify and the writer's walks recurse) or the
 * engine cannot read (ClickHouse's input_format_json_max_depth is 1000). LangChain and LangGraph runs nest
 * a few dozen levels (serialized chains, message lists inside state inside inputs).
 */
export const MAX_JSON_DEPTH = 200;

/** JSON's structural characters, as char codes (the same in UTF-16 text and UTF-8 bytes). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACE = 0x7d;
export const CLOSE_BRACKET = 0x5d;

/**
 * The index in `text` of the bracket that opens level `maxDepth + 1`, or -1 when the text nests no deeper than
 * `maxDepth`. One pass without recursion (a million open brackets cost a million steps, never a stack); string
 * contents are skipped with indexOf. The text is not validated: JSON.parse does that after.
 */
export function jsonDepthExceeded(text: string, maxDepth = MAX_JSON_DEPTH): number {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // The closing quote: the next one not escaped by an odd run of backslashes.
      let j = i;
      for (;;) {
        j = text.indexOf('"', j + 1);
        if (j < 0) return -1; // unterminated string: JSON.parse reports it
        let k = j - 1;
        while (text.charCodeAt(k) === BACKSLASH) k--;
        if ((j - 1 - k) % 2 === 0) break;
      }
      i = j;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return i;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return -1;
}

/** A JSON document that nests deeper than MAX_JSON_DEPTH; `position` is the index of the offending bracket. */
export class JsonTooDeepError extends Error {
  constructor(
    readonly position: number,
    readonly maxDepth = MAX_JSON_DEPTH,
  ) {
    super(`JSON nests deeper than ${maxDepth} levels (at position ${position})`);
  }
}

/** JSON.parse for text from a client: throws JsonTooDeepError past MAX_JSON_DEPTH, SyntaxError on invalid JSON. */
export function parseClientJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  const at = jsonDepthExceeded(text, maxDepth);
  if (at >= 0) throw new JsonTooDeepError(at, maxDepth);
  return JSON.parse(text);
}

/** The 422 item for a JSON document from a client that nests too deep. */
export function jsonTooDeepItem(err: JsonTooDeepError, loc: (string | number)[]): { loc: (string | number)[]; msg: string; type: string } {
  return { loc, msg: err.message, type: 'json_too_deep' };
}
