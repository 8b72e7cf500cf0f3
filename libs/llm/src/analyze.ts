import type { LlmMessage, LlmView, ModelPriceMap, RunUsage } from '@th/contracts';
import { detectFormat, isObj, normalizeMessages } from './format';
import { resolveModel } from './model';
import { computeCosts, DEFAULT_PRICE_MAP, matchPrice, type PriceEntry } from './prices';
import { countMessageTokens, countTokens } from './tokenizer';
import { extractUsage, type Usage } from './usage';
import { validateSpecMessages } from './validate';

export interface LlmRunInput {
  inputs?: unknown;
  outputs?: unknown;
  extra?: unknown;
  start_time?: string;
}

export interface LlmAnalysis extends RunUsage {
  view: LlmView;
}

function promptText(inputs: unknown): string {
  if (!isObj(inputs)) return '';
  const p = inputs.prompts ?? inputs.prompt ?? inputs.input ?? inputs.text;
  if (typeof p === 'string') return p;
  if (Array.isArray(p)) return p.filter((x) => typeof x === 'string').join('\n');
  return '';
}

function outputText(outputs: unknown): string {
  if (!isObj(outputs)) return '';
  const o = outputs.text ?? outputs.output ?? outputs.completion;
  if (typeof o === 'string') return o;
  // LangChain LLMResult: generations[][].text
  if (Array.isArray(outputs.generations)) {
    return outputs.generations
      .flat()
      .map((g) => (isObj(g) && typeof g.text === 'string' ? g.text : ''))
      .join('');
  }
  return '';
}

/** Estimated usage, with the resolved model's tokenizer, for LLM runs that supplied none. */
function estimate(inputs: unknown, outputs: unknown, inMsgs: LlmMessage[], outMsgs: LlmMessage[], model: string | null): Usage | null {
  const input = inMsgs.length > 0 ? countMessageTokens(inMsgs, model, true) : countTokens(promptText(inputs), model);
  let output = 0;
  if (outMsgs.length > 0) output = countMessageTokens(outMsgs, model, false) - 3 * outMsgs.length - outMsgs.reduce((s, m) => s + countTokens(String(m.role), model), 0);
  else output = countTokens(outputText(outputs), model);
  if (input === 0 && output === 0) return null;
  return { input_tokens: input, output_tokens: output, total_tokens: input + output, input_token_details: {}, output_token_details: {}, input_cost: null, output_cost: null, total_cost: null, source: 'usage_metadata' };
}

/**
 * Everything derived from an LLM run: formats and the normalized messages, validation problems of the
 * spec's format, provider/model, tokens (supplied, or estimated with the model's tokenizer) and costs
 * (explicit, or from the workspace's price map, then the default table).
 */
export function analyzeLlmRun(run: LlmRunInput, workspacePrices: readonly PriceEntry[] = []): LlmAnalysis {
  const metadata = isObj(run.extra) ? run.extra.metadata : undefined;
  const { provider, model } = resolveModel(metadata, run.inputs, run.extra);
  const inFormat = detectFormat(run.inputs);
  const outFormat = run.outputs === undefined ? 'unknown' : detectFormat(run.outputs);
  const inMsgs = normalizeMessages(run.inputs, inFormat);
  const outMsgs = normalizeMessages(run.outputs, outFormat);

  const groups: { loc: (string | number)[]; messages: unknown }[] = [];
  const rawOut = isObj(run.outputs) ? run.outputs : {};
  if (inFormat === 'spec' && isObj(run.inputs)) groups.push({ loc: ['inputs', 'messages'], messages: run.inputs.messages });
  if (outFormat === 'spec') {
    if (Array.isArray(rawOut.messages)) groups.push({ loc: ['outputs', 'messages'], messages: rawOut.messages });
    else groups.push({ loc: ['outputs'], messages: [rawOut] });
  }
  const validation_errors = groups.length > 0 ? validateSpecMessages(groups) : [];

  const supplied = extractUsage(run.outputs, run.extra);
  const usage = supplied ?? estimate(run.inputs, run.outputs, inMsgs, outMsgs, model);
  const tokenSource: LlmView['token_source'] = supplied ? supplied.source : usage ? 'estimated' : 'none';
  const entry = matchPrice(workspacePrices, model, provider, run.start_time) ?? matchPrice(DEFAULT_PRICE_MAP, model, provider, run.start_time);
  const costs = computeCosts(usage, entry);

  return {
    prompt_tokens: usage?.input_tokens ?? 0,
    completion_tokens: usage?.output_tokens ?? 0,
    total_tokens: usage?.total_tokens ?? 0,
    prompt_cost: costs.prompt_cost,
    completion_cost: costs.completion_cost,
    total_cost: costs.total_cost,
    view: {
      provider,
      model,
      input_format: inFormat,
      output_format: outFormat,
      input_messages: inMsgs as unknown as Record<string, unknown>[],
      output_messages: outMsgs as unknown as Record<string, unknown>[],
      token_source: tokenSource,
      cost_source: costs.source,
      price_map_id: costs.price_map_id,
      input_token_details: usage?.input_token_details ?? {},
      output_token_details: usage?.output_token_details ?? {},
      validation_errors,
    },
  };
}

export type { ModelPriceMap };
