import { compileUserPattern, type ModelPriceMap, type UserPattern } from '@th/contracts';
import type { Usage } from './usage';

/** The fields of a price map entry cost computation needs. */
export type PriceEntry = Pick<ModelPriceMap, 'id' | 'match_pattern' | 'provider' | 'prompt_cost' | 'completion_cost' | 'prompt_cost_details' | 'completion_cost_details' | 'start_time'>;

const M = 1e-6; // prices below are USD per million tokens, stored per token
interface Row {
  name: string;
  pattern: string;
  provider: string;
  input: number;
  output: number;
  cacheRead?: number;
  cacheWrite?: number;
}

/**
 * Default prices (USD per 1M tokens, list prices as published by the providers in 2025) for common
 * models. Workspace entries take precedence over these.
 */
const DEFAULTS: Row[] = [
  { name: 'gpt-5', pattern: '^gpt-5(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 1.25, output: 10, cacheRead: 0.125 },
  { name: 'gpt-5-mini', pattern: '^gpt-5-mini(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 0.25, output: 2, cacheRead: 0.025 },
  { name: 'gpt-5-nano', pattern: '^gpt-5-nano(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 0.05, output: 0.4, cacheRead: 0.005 },
  { name: 'gpt-4.1', pattern: '^gpt-4\\.1(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 2, output: 8, cacheRead: 0.5 },
  { name: 'gpt-4.1-mini', pattern: '^gpt-4\\.1-mini(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 0.4, output: 1.6, cacheRead: 0.1 },
  { name: 'gpt-4.1-nano', pattern: '^gpt-4\\.1-nano(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 0.1, output: 0.4, cacheRead: 0.025 },
  { name: 'gpt-4o', pattern: '^(chatgpt-4o-latest|gpt-4o(-\\d{4}-\\d{2}-\\d{2})?)$', provider: 'openai', input: 2.5, output: 10, cacheRead: 1.25 },
  { name: 'gpt-4o-mini', pattern: '^gpt-4o-mini(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 0.15, output: 0.6, cacheRead: 0.075 },
  { name: 'o1', pattern: '^o1(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 15, output: 60, cacheRead: 7.5 },
  { name: 'o3', pattern: '^o3(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 2, output: 8, cacheRead: 0.5 },
  { name: 'o3-mini', pattern: '^o3-mini(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 1.1, output: 4.4, cacheRead: 0.55 },
  { name: 'o4-mini', pattern: '^o4-mini(-\\d{4}-\\d{2}-\\d{2})?$', provider: 'openai', input: 1.1, output: 4.4, cacheRead: 0.275 },
  { name: 'gpt-4-turbo', pattern: '^gpt-4-turbo(-\\d{4}-\\d{2}-\\d{2}|-preview)?$', provider: 'openai', input: 10, output: 30 },
  { name: 'gpt-3.5-turbo', pattern: '^gpt-3\\.5-turbo(-\\d{4})?$', provider: 'openai', input: 0.5, output: 1.5 },
  { name: 'claude-opus-4', pattern: '^claude-opus-4(-[01])?(-\\d{8})?$', provider: 'anthropic', input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  { name: 'claude-opus-4.5', pattern: '^claude-opus-4-5(-\\d{8})?$', provider: 'anthropic', input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  { name: 'claude-sonnet-4', pattern: '^claude-sonnet-4(-5)?(-\\d{8})?$', provider: 'anthropic', input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  { name: 'claude-3.7-sonnet', pattern: '^claude-3-7-sonnet(-\\d{8}|-latest)?$', provider: 'anthropic', input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  { name: 'claude-3.5-sonnet', pattern: '^claude-3-5-sonnet(-\\d{8}|-latest)?$', provider: 'anthropic', input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  { name: 'claude-haiku-4.5', pattern: '^claude-haiku-4-5(-\\d{8})?$', provider: 'anthropic', input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  { name: 'claude-3.5-haiku', pattern: '^claude-3-5-haiku(-\\d{8}|-latest)?$', provider: 'anthropic', input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  { name: 'claude-3-haiku', pattern: '^claude-3-haiku(-\\d{8})?$', provider: 'anthropic', input: 0.25, output: 1.25, cacheRead: 0.03, cacheWrite: 0.3 },
  { name: 'gemini-2.5-pro', pattern: '^gemini-2\\.5-pro(-[\\w-]+)?$', provider: 'google_genai', input: 1.25, output: 10, cacheRead: 0.31 },
  { name: 'gemini-2.5-flash', pattern: '^gemini-2\\.5-flash(-[\\w-]+)?$', provider: 'google_genai', input: 0.3, output: 2.5, cacheRead: 0.075 },
  { name: 'gemini-2.0-flash', pattern: '^gemini-2\\.0-flash(-[\\w-]+)?$', provider: 'google_genai', input: 0.1, output: 0.4, cacheRead: 0.025 },
  { name: 'gemini-1.5-pro', pattern: '^gemini-1\\.5-pro(-[\\w-]+)?$', provider: 'google_genai', input: 1.25, output: 5 },
  { name: 'gemini-1.5-flash', pattern: '^gemini-1\\.5-flash(-[\\w-]+)?$', provider: 'google_genai', input: 0.075, output: 0.3 },
  { name: 'mistral-large', pattern: '^mistral-large(-\\d{4}|-latest)?$', provider: 'mistralai', input: 2, output: 6 },
  { name: 'mistral-small', pattern: '^mistral-small(-\\d{4}|-latest)?$', provider: 'mistralai', input: 0.1, output: 0.3 },
];

/** Stable ids for the default entries (UUIDv5-like constants, so clients can refer to them). */
const defaultId = (i: number): string => `00000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`;

export const DEFAULT_PRICE_MAP: ModelPriceMap[] = DEFAULTS.map((r, i) => ({
  id: defaultId(i),
  tenant_id: null,
  name: r.name,
  match_pattern: r.pattern,
  provider: r.provider,
  prompt_cost: r.input * M,
  completion_cost: r.output * M,
  prompt_cost_details:
    r.cacheRead !== undefined || r.cacheWrite !== undefined
      ? { ...(r.cacheRead !== undefined ? { cache_read: r.cacheRead * M } : {}), ...(r.cacheWrite !== undefined ? { cache_creation: r.cacheWrite * M } : {}) }
      : null,
  completion_cost_details: null,
  start_time: null,
  match_path: [],
  created_at: null,
  modified_at: null,
}));

// Patterns are the workspace's own (and entries stored before patterns were checked for RE2): run in RE2, and an
// entry whose pattern RE2 refuses matches nothing.
const regexCache = new Map<string, UserPattern | null>();
function regexOf(pattern: string): UserPattern | null {
  let re = regexCache.get(pattern);
  if (re === undefined) {
    try {
      re = compileUserPattern(pattern);
    } catch {
      re = null;
    }
    if (regexCache.size > 10_000) regexCache.clear();
    regexCache.set(pattern, re);
  }
  return re;
}

/** Compiles the default table's patterns ahead of the first LLM run (some 30 ms of RE2 compilation). */
export function warmPriceMatching(): void {
  for (const e of DEFAULT_PRICE_MAP) regexOf(e.match_pattern);
}

/** Model names longer than this match no price entry (real names are well under 200 characters). */
export const MAX_PRICED_MODEL_NAME = 1000;

/** Providers name themselves differently across SDKs; compare loosely. */
const providerKey = (p: string): string => p.toLowerCase().replace(/[^a-z]/g, '').replace(/^google(genai|vertexai|ai)?$/, 'google').replace(/^azureopenai$/, 'openai');

/**
 * The price entry for a model: workspace entries first (the newest start_time not after the run),
 * then the default table. An entry with a provider matches only runs of that provider (or of none).
 */
export function matchPrice(entries: readonly PriceEntry[], model: string | null, provider: string | null, runStartIso?: string): PriceEntry | null {
  // Linear is not free: a model "name" of megabytes against every entry would still hold the writer's loop.
  if (!model || model.length > MAX_PRICED_MODEL_NAME) return null;
  let best: PriceEntry | null = null;
  for (const e of entries) {
    if (e.start_time && runStartIso && e.start_time > runStartIso) continue;
    if (e.provider && provider && providerKey(e.provider) !== providerKey(provider)) continue;
    const re = regexOf(e.match_pattern);
    if (!re || !re.test(model)) continue;
    if (!best || (e.start_time ?? '') > (best.start_time ?? '')) best = e;
  }
  return best;
}

export interface Costs {
  prompt_cost: number | null;
  completion_cost: number | null;
  total_cost: number | null;
  source: 'explicit' | 'price_map' | 'none';
  price_map_id: string | null;
}

/**
 * Costs of a run: explicit input_cost/output_cost/total_cost win; the rest comes from the price entry.
 * Cached input tokens are priced at their cache_read/cache_creation prices when the entry has them.
 */
export function computeCosts(usage: Usage | null, entry: PriceEntry | null): Costs {
  const explicit = usage && (usage.input_cost !== null || usage.output_cost !== null || usage.total_cost !== null);
  if (usage && explicit) {
    return { prompt_cost: usage.input_cost, completion_cost: usage.output_cost, total_cost: usage.total_cost, source: 'explicit', price_map_id: null };
  }
  if (!usage || !entry) return { prompt_cost: null, completion_cost: null, total_cost: null, source: 'none', price_map_id: null };
  const pd = entry.prompt_cost_details ?? {};
  const cd = entry.completion_cost_details ?? {};
  let prompt = 0;
  let plainInput = usage.input_tokens;
  for (const k of ['cache_read', 'cache_creation', 'audio', 'image'] as const) {
    const n = usage.input_token_details[k] ?? 0;
    if (n > 0 && pd[k] !== undefined) {
      prompt += n * pd[k];
      plainInput -= n;
    }
  }
  prompt += Math.max(0, plainInput) * entry.prompt_cost;
  let completion = 0;
  let plainOutput = usage.output_tokens;
  for (const k of ['reasoning', 'audio', 'image'] as const) {
    const n = usage.output_token_details[k] ?? 0;
    if (n > 0 && cd[k] !== undefined) {
      completion += n * cd[k];
      plainOutput -= n;
    }
  }
  completion += Math.max(0, plainOutput) * entry.completion_cost;
  return { prompt_cost: prompt, completion_cost: completion, total_cost: prompt + completion, source: 'price_map', price_map_id: entry.id };
}
