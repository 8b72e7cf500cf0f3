import { z } from 'zod';
import { timestamp, uuid } from './common.schema';
import { userPatternProblem } from './user-pattern';

/** The spec's message roles and content item types (LLM run conventions). */
export const LLM_MESSAGE_ROLES = ['system', 'reasoning', 'user', 'assistant', 'tool'] as const;
export const LLM_CONTENT_TYPES = [
  'text',
  'reasoning',
  'image',
  'file',
  'audio',
  'video',
  'tool_call',
  'server_tool_call',
  'server_tool_result',
] as const;
export type LlmMessageRole = (typeof LLM_MESSAGE_ROLES)[number];
export type LlmContentType = (typeof LLM_CONTENT_TYPES)[number];

export interface LlmContentItem {
  type: LlmContentType | string;
  [key: string]: unknown;
}
export interface LlmMessage {
  role: LlmMessageRole | string;
  content: LlmContentItem[];
  tool_call_id?: string;
  usage_metadata?: Record<string, unknown>;
}

export const LLM_FORMATS = ['openai', 'anthropic', 'spec', 'unknown'] as const;
export type LlmFormat = (typeof LLM_FORMATS)[number];

const problem = z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() });

/**
 * What the writer derives from an LLM run: the detected formats, the inputs and outputs normalized
 * to the spec's message format (one way to render all three formats), where the tokens and costs came
 * from, and the problems found when the run uses the spec's format but breaks its rules.
 */
export const llmViewSchema = z.object({
  provider: z.string().nullable(),
  model: z.string().nullable(),
  input_format: z.enum(LLM_FORMATS),
  output_format: z.enum(LLM_FORMATS),
  input_messages: z.array(z.record(z.string(), z.unknown())),
  output_messages: z.array(z.record(z.string(), z.unknown())),
  token_source: z.enum(['usage_metadata', 'provider_usage', 'estimated', 'none']),
  cost_source: z.enum(['explicit', 'price_map', 'none']),
  price_map_id: z.string().nullable(),
  input_token_details: z.record(z.string(), z.number()),
  output_token_details: z.record(z.string(), z.number()),
  validation_errors: z.array(problem),
});
export type LlmView = z.infer<typeof llmViewSchema>;

/** A price per token must be a finite non-negative number. */
const price = z.number().finite().nonnegative();

/** A regular expression matched against model names by RE2 (linear time); see user-pattern.ts for what is refused. */
const matchPattern = z
  .string()
  .min(1)
  .max(1000)
  .superRefine((p, ctx) => {
    const problem = userPatternProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: `match_pattern is ${problem.startsWith('not ') ? problem : `refused: ${problem}`}` });
  });

export const priceDetailsSchema = z
  .object({
    cache_read: price.optional(),
    cache_creation: price.optional(),
    audio: price.optional(),
    image: price.optional(),
    reasoning: price.optional(),
  })
  .strict();

/** Body of POST /model-price-map (prices are per token). */
export const modelPriceMapCreateSchema = z
  .object({
    name: z.string().min(1).max(256),
    match_pattern: matchPattern,
    provider: z.string().min(1).max(128).nullable().optional(),
    prompt_cost: price,
    completion_cost: price,
    prompt_cost_details: priceDetailsSchema.nullable().optional(),
    completion_cost_details: priceDetailsSchema.nullable().optional(),
    start_time: timestamp.nullable().optional(),
    match_path: z.array(z.string()).optional(),
  })
  .strict();
export type ModelPriceMapCreate = z.infer<typeof modelPriceMapCreateSchema>;

/** Body of PUT/PATCH /model-price-map/{id}: any subset of the create fields. */
export const modelPriceMapUpdateSchema = modelPriceMapCreateSchema.partial().strict();
export type ModelPriceMapUpdate = z.infer<typeof modelPriceMapUpdateSchema>;

export const modelPriceMapIdParamSchema = z.object({ id: uuid });

export const modelPriceMapSchema = z.object({
  id: z.string(),
  /** null for the entries of the default table shipped with the service. */
  tenant_id: z.string().nullable(),
  name: z.string(),
  match_pattern: z.string(),
  provider: z.string().nullable(),
  prompt_cost: z.number(),
  completion_cost: z.number(),
  prompt_cost_details: z.record(z.string(), z.number()).nullable(),
  completion_cost_details: z.record(z.string(), z.number()).nullable(),
  start_time: z.string().nullable(),
  match_path: z.array(z.string()),
  created_at: z.string().nullable(),
  modified_at: z.string().nullable(),
});
export type ModelPriceMap = z.infer<typeof modelPriceMapSchema>;
