import { isObj } from './format';

export const INPUT_DETAIL_KEYS = ['cache_read', 'cache_creation', 'audio', 'text', 'image'] as const;
export const OUTPUT_DETAIL_KEYS = ['reasoning', 'audio', 'text', 'image'] as const;

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  input_token_details: Record<string, number>;
  output_token_details: Record<string, number>;
  input_cost: number | null;
  output_cost: number | null;
  total_cost: number | null;
  source: 'usage_metadata' | 'provider_usage';
}

type Obj = Record<string, unknown>;
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const count = (v: unknown): number => Math.max(0, Math.round(num(v) ?? 0));

function details(v: unknown, keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  if (!isObj(v)) return out;
  for (const k of keys) if (num(v[k]) !== null) out[k] = count(v[k]);
  return out;
}

/** The spec's usage_metadata object, with total inferred as input plus output. */
export function fromUsageMetadata(u: Obj): Usage {
  const input = count(u.input_tokens);
  const output = count(u.output_tokens);
  const inputCost = num(u.input_cost);
  const outputCost = num(u.output_cost);
  return {
    input_tokens: input,
    output_tokens: output,
    total_tokens: num(u.total_tokens) !== null ? count(u.total_tokens) : input + output,
    input_token_details: details(u.input_token_details, INPUT_DETAIL_KEYS),
    output_token_details: details(u.output_token_details, OUTPUT_DETAIL_KEYS),
    input_cost: inputCost,
    output_cost: outputCost,
    total_cost: num(u.total_cost) ?? (inputCost !== null || outputCost !== null ? (inputCost ?? 0) + (outputCost ?? 0) : null),
    source: 'usage_metadata',
  };
}

/** OpenAI (`usage.prompt_tokens`) and Anthropic (`usage.input_tokens`) responses carry their own usage. */
function fromProviderUsage(u: Obj): Usage | null {
  if (num(u.prompt_tokens) !== null || num(u.completion_tokens) !== null) {
    const input = count(u.prompt_tokens);
    const output = count(u.completion_tokens);
    const pd = isObj(u.prompt_tokens_details) ? u.prompt_tokens_details : {};
    const cd = isObj(u.completion_tokens_details) ? u.completion_tokens_details : {};
    const inDetails: Record<string, number> = {};
    if (num(pd.cached_tokens) !== null) inDetails.cache_read = count(pd.cached_tokens);
    if (num(pd.audio_tokens) !== null) inDetails.audio = count(pd.audio_tokens);
    const outDetails: Record<string, number> = {};
    if (num(cd.reasoning_tokens) !== null) outDetails.reasoning = count(cd.reasoning_tokens);
    if (num(cd.audio_tokens) !== null) outDetails.audio = count(cd.audio_tokens);
    return { input_tokens: input, output_tokens: output, total_tokens: num(u.total_tokens) !== null ? count(u.total_tokens) : input + output, input_token_details: inDetails, output_token_details: outDetails, input_cost: null, output_cost: null, total_cost: null, source: 'provider_usage' };
  }
  if (num(u.input_tokens) !== null || num(u.output_tokens) !== null) {
    // Anthropic counts cached input apart from input_tokens; the spec's input total includes it.
    const read = count(u.cache_read_input_tokens);
    const created = count(u.cache_creation_input_tokens);
    const input = count(u.input_tokens) + read + created;
    const output = count(u.output_tokens);
    const inDetails: Record<string, number> = {};
    if (read > 0) inDetails.cache_read = read;
    if (created > 0) inDetails.cache_creation = created;
    return { input_tokens: input, output_tokens: output, total_tokens: input + output, input_token_details: inDetails, output_token_details: {}, input_cost: null, output_cost: null, total_cost: null, source: 'provider_usage' };
  }
  return null;
}

/**
 * The usage_metadata object a run reports, as sent: on the run (extra.metadata, as the SDK sets it, or a
 * top-level key of the outputs), else on the last output message of the spec's format.
 */
export function findUsageMetadata(outputs: unknown, extra: unknown): Obj | null {
  const out = isObj(outputs) ? outputs : {};
  const meta = isObj(extra) && isObj(extra.metadata) ? extra.metadata : {};
  const runLevel = [isObj(extra) ? extra.usage_metadata : undefined, meta.usage_metadata, out.usage_metadata];
  for (const u of runLevel) if (isObj(u)) return u;
  const messages = Array.isArray(out.messages) ? out.messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isObj(m) && isObj(m.usage_metadata)) return m.usage_metadata;
  }
  return null;
}

/** Usage of a run: its usage_metadata (findUsageMetadata), else the provider's own usage block in the outputs. */
export function extractUsage(outputs: unknown, extra: unknown): Usage | null {
  const u = findUsageMetadata(outputs, extra);
  if (u) return fromUsageMetadata(u);
  const out = isObj(outputs) ? outputs : {};
  if (isObj(out.usage)) return fromProviderUsage(out.usage);
  return null;
}

/**
 * The token and cost breakdowns of a run's usage_metadata as the SDKs read them on a run (every numeric key
 * kept, not only the ones priced): prompt/completion_token_details and prompt/completion_cost_details.
 */
export function usageDetails(outputs: unknown, extra: unknown): Record<'prompt_token_details' | 'completion_token_details' | 'prompt_cost_details' | 'completion_cost_details', Record<string, number> | null> {
  const u = findUsageMetadata(outputs, extra) ?? {};
  const numbers = (v: unknown): Record<string, number> | null => {
    if (!isObj(v)) return null;
    const o: Record<string, number> = {};
    for (const [k, n] of Object.entries(v)) if (num(n) !== null) o[k] = n as number;
    return Object.keys(o).length > 0 ? o : null;
  };
  return {
    prompt_token_details: numbers(u.input_token_details),
    completion_token_details: numbers(u.output_token_details),
    prompt_cost_details: numbers(u.input_cost_details),
    completion_cost_details: numbers(u.output_cost_details),
  };
}
