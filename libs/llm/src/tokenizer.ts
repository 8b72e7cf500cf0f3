import { createRequire } from 'node:module';
import type { LlmMessage } from '@th/contracts';

// js-tiktoken's type declarations are ESM-only while its CommonJS build is what Node loads here.
interface Tiktoken {
  encode(text: string, allowedSpecial?: 'all'): number[];
}
interface Ranks {
  pat_str: string;
  special_tokens: Record<string, number>;
}
type TiktokenCtor = new (ranks: unknown) => Tiktoken;
const load = createRequire(__filename);
const ranks = (name: string): Ranks => {
  const m = load(`js-tiktoken/ranks/${name}`) as { default?: Ranks } & Ranks;
  return m.default ?? m;
};
const { Tiktoken } = load('js-tiktoken/lite') as { Tiktoken: TiktokenCtor };

/** Pieces whose token count is remembered, per encoding; the memo starts over when it is full. */
const PIECE_MEMO_ENTRIES = 50_000;
/**
 * Longest piece (in UTF-16 units) that is byte-pair encoded. js-tiktoken's merge is quadratic in a piece's
 * bytes (a 64-character piece of rare CJK takes ~9 ms, 512 characters ~0.3 s), and one pattern piece can be
 * a whole text without spaces: a longer piece is estimated from its UTF-8 size instead.
 */
const MAX_ENCODED_PIECE = 128;
/**
 * Characters of pieces not seen before that one text may have byte-pair encoded (the rest is estimated):
 * bounds a text's CPU (an SDK test sends every Unicode code point in one string; that took minutes).
 */
const ENCODE_BUDGET_CHARS = 32_768;
/** Above this length, a text whose pieces cannot all be counted alone is still counted piece by piece (never whole). */
const MAX_WHOLE_TEXT = 4_096;
/** UTF-8 bytes per token assumed for a piece too long to encode (OpenAI's rule of thumb for English). */
const BYTES_PER_TOKEN = 4;

/**
 * Counts tokens exactly as the encoder's encode(text, 'all') would, memoizing the count of each
 * pre-tokenized piece. The encoder splits the text at special tokens, splits each stretch between them
 * with its pattern, and byte-pair encodes every piece on its own; so the count is the number of special
 * tokens plus the sum over pieces, and a piece seen before (words repeat) costs one map lookup instead
 * of a byte-pair merge. A piece the pattern would split differently when encoded alone is not
 * memoized: the whole text is then counted by the encoder itself.
 */
class TokenCounter {
  private readonly enc: Tiktoken;
  /** The piece starting exactly at lastIndex (sticky): test() finds its end without a match array. */
  private readonly piece: RegExp;
  /** The first piece of a string, for the check that a piece encodes alone as itself. */
  private readonly first: RegExp;
  private readonly special: RegExp | null;
  private readonly memo = new Map<string, number>();
  /** What is left of ENCODE_BUDGET_CHARS for the text being counted. */
  private budget = 0;

  constructor(r: Ranks) {
    this.enc = new Tiktoken(r);
    this.piece = new RegExp(r.pat_str, 'uy');
    this.first = new RegExp(r.pat_str, 'u');
    const specials = Object.keys(r.special_tokens).map((t) => t.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&'));
    this.special = specials.length > 0 ? new RegExp(specials.join('|'), 'g') : null;
  }

  count(text: string): number {
    this.budget = ENCODE_BUDGET_CHARS;
    let total = 0;
    let start = 0;
    if (this.special) {
      this.special.lastIndex = 0;
      for (let m = this.special.exec(text); m !== null; m = this.special.exec(text)) {
        const n = this.stretch(text.slice(start, m.index));
        if (n < 0) return this.whole(text);
        total += n + 1;
        start = m.index + m[0].length;
      }
    }
    const n = this.stretch(start === 0 ? text : text.slice(start));
    return n < 0 ? this.whole(text) : total + n;
  }

  /** The encoder's own count of a text; a long one is counted piece by piece, each piece alone. */
  private whole(text: string): number {
    if (text.length <= MAX_WHOLE_TEXT) return this.enc.encode(text, 'all').length;
    return this.stretch(text, true);
  }

  /**
   * Tokens of a stretch without special tokens, or -1 when a piece cannot be counted on its own. With
   * `approximate`, such a piece is counted alone all the same, and a position where no piece starts
   * estimates the rest.
   */
  private stretch(s: string, approximate = false): number {
    let total = 0;
    // The encoder's pattern covers every character, so its pieces follow one another: each is the match
    // starting where the previous one ended. A position where none starts (or an empty match) is left
    // to the encoder itself.
    for (let pos = 0; pos < s.length; ) {
      this.piece.lastIndex = pos;
      if (!this.piece.test(s) || this.piece.lastIndex <= pos) return approximate ? total + estimate(s.slice(pos)) : -1;
      const p = s.slice(pos, this.piece.lastIndex);
      pos = this.piece.lastIndex;
      let n = this.memo.get(p);
      if (n === undefined && (p.length > MAX_ENCODED_PIECE || p.length > this.budget)) {
        total += estimate(p);
        continue;
      }
      if (n === undefined) {
        this.budget -= p.length;
        // Encoded alone, the piece must be one piece again for its count to be the count in context.
        const alone = this.first.exec(p);
        if (!approximate && (alone === null || alone[0] !== p)) return -1;
        n = this.enc.encode(p, 'all').length;
        if (this.memo.size >= PIECE_MEMO_ENTRIES) this.memo.clear();
        this.memo.set(p, n);
      }
      total += n;
    }
    return total;
  }
}

function estimate(s: string): number {
  return Math.ceil(Buffer.byteLength(s, 'utf8') / BYTES_PER_TOKEN);
}

let cl100k: TokenCounter | null = null;
let o200k: TokenCounter | null = null;

/** OpenAI's encoding for the model; o200k_base for current models and as the default for others. */
export function encodingFor(model: string | null): 'cl100k_base' | 'o200k_base' {
  const m = (model ?? '').toLowerCase();
  if (/^(gpt-4(?!o|\.1|\.5)|gpt-3\.5|text-embedding-(ada|3)|davinci|babbage)/.test(m)) return 'cl100k_base';
  return 'o200k_base';
}

function counter(name: 'cl100k_base' | 'o200k_base'): TokenCounter {
  if (name === 'cl100k_base') return (cl100k ??= new TokenCounter(ranks('cl100k_base')));
  return (o200k ??= new TokenCounter(ranks('o200k_base')));
}

/**
 * Builds the default encoding's tables (about 0.6 s of CPU, once per process) ahead of the first run
 * that needs an estimate, so that run's batch does not stall behind them.
 */
export function warmTokenizer(): void {
  counter('o200k_base');
}

export function countTokens(text: string, model: string | null): number {
  if (text === '') return 0;
  return counter(encodingFor(model)).count(text);
}

function itemText(item: Record<string, unknown>): string {
  switch (item.type) {
    case 'text':
    case 'reasoning':
      return typeof item.text === 'string' ? item.text : '';
    case 'tool_call':
    case 'server_tool_call':
      return `${typeof item.name === 'string' ? item.name : ''}${JSON.stringify(item.args ?? {})}`;
    case 'server_tool_result':
      return JSON.stringify(item.output ?? '');
    default:
      return '';
  }
}

/**
 * Tokens of chat messages with the model's tokenizer, counted as OpenAI documents for chat models:
 * 3 tokens of framing per message plus its role and text; `primed` adds the 3 that prime the reply.
 */
export function countMessageTokens(messages: LlmMessage[], model: string | null, primed: boolean): number {
  if (messages.length === 0) return 0;
  let total = primed ? 3 : 0;
  for (const m of messages) {
    total += 3 + countTokens(String(m.role ?? ''), model);
    for (const item of m.content ?? []) total += countTokens(itemText(item), model);
  }
  return total;
}
