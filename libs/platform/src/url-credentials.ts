/** Where the authority of a URL ends inside a text (a JSON string's quote and escapes included). */
const AUTHORITY_END = new Set(['/', '?', '#', ' ', '\t', '\n', '\r', '"', "'", '\\', '<', '>', '`']);

/** Stands for the credentials taken out of a URL. */
export const MASKED_CREDENTIALS = '***';

/**
 * Replaces the user and password of every URL in `text` (`https://user:pass@host/...` becomes
 * `https://***@host/...`); the rest is kept. Works on a bare URL, a message or a serialized log line,
 * in one pass (linear in the text).
 */
export function maskUrlCredentials(text: string): string {
  let out = '';
  let copied = 0;
  let pos = 0;
  for (;;) {
    const sep = text.indexOf('://', pos);
    if (sep < 0) break;
    const start = sep + 3;
    let end = start;
    let at = -1; // the authority's last '@' (a password may hold another)
    for (; end < text.length && !AUTHORITY_END.has(text[end]); end++) if (text[end] === '@') at = end;
    if (at >= 0) {
      out += text.slice(copied, start) + MASKED_CREDENTIALS;
      copied = at;
    }
    pos = Math.max(end, start);
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/** Whether a URL carries a user or password. */
export function hasUrlCredentials(url: string): boolean {
  return maskUrlCredentials(url) !== url;
}
