import { createRequire } from 'node:module';
import type { LlmMessage } from '@th/contracts';

// js-tiktoken's type declarations are ESM-only while its CommonJS build is what Node loads here.
interface Tiktoken {
  encode(text: string, allowedSpecial?: 'all'): number[];
}
type TiktokenCtor = new (ranks: unknown) => Tiktoken;
const load = createRequire(__filename);
const ranks = (name: string): unknown => {
  const m = load(`js-tiktoken/ranks/${name}`) as { default?: unknown };
  return m.default ?? m;
};
const { Tiktoken } = load('js-tiktoken/lite') as { Tiktoken: TiktokenCtor };

let cl100kEnc: Tiktoken | null = null;
let o200kEnc: Tiktoken | null = null;

/** OpenAI's encoding for the model; o200k_base for current models and as the default for others. */
export function encodingFor(model: string | null): 'cl100k_base' | 'o200k_base' {
  const m = (model ?? '').toLowerCase();
  if (/^(gpt-4(?!o|\.1|\.5)|gpt-3\.5|text-embedding-(ada|3)|davinci|babbage)/.test(m)) return 'cl100k_base';
  return 'o200k_base';
}

function encoder(name: 'cl100k_base' | 'o200k_base'): Tiktoken {
  if (name === 'cl100k_base') return (cl100kEnc ??= new Tiktoken(ranks('cl100k_base')));
  return (o200kEnc ??= new Tiktoken(ranks('o200k_base')));
}

export function countTokens(text: string, model: string | null): number {
  if (text === '') return 0;
  return encoder(encodingFor(model)).encode(text, 'all').length;
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
