import { z } from 'zod';
import { jsonObject, queryBool, timestamp, uuid } from './common.schema';

export const projectCreateSchema = z.object({
  id: uuid.optional(),
  name: z.string().min(1).max(1024),
  description: z.string().nullish(),
  extra: jsonObject.nullish(),
  start_time: timestamp.nullish(),
  end_time: timestamp.nullish(),
  reference_dataset_id: uuid.nullish(),
  default_dataset_id: uuid.nullish(),
  trace_tier: z.enum(['longlived', 'shortlived']).nullish(),
});
export type ProjectCreate = z.infer<typeof projectCreateSchema>;

/** Null means "leave unchanged": the SDK sends explicit nulls for fields it does not touch. */
export const projectUpdateSchema = z.object({
  name: z.string().min(1).max(1024).nullish(),
  description: z.string().nullish(),
  extra: jsonObject.nullish(),
  end_time: timestamp.nullish(),
  default_dataset_id: uuid.nullish(),
  trace_tier: z.enum(['longlived', 'shortlived']).nullish(),
});
export type ProjectUpdate = z.infer<typeof projectUpdateSchema>;

const queryArray = <T extends z.ZodTypeAny>(t: T) =>
  z.union([t, z.array(t)]).transform((v) => (Array.isArray(v) ? v : [v]) as z.infer<T>[]);

export const projectListQuerySchema = z.object({
  id: queryArray(uuid).optional(),
  name: z.string().optional(),
  name_contains: z.string().optional(),
  reference_dataset: queryArray(uuid).optional(),
  reference_free: queryBool.optional(),
  include_stats: queryBool.optional(),
  /** With include_stats: aggregate only runs that started at or after this time (LangSmith's stats_start_time). */
  stats_start_time: timestamp.optional(),
  metadata: z.string().optional(),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type ProjectListQuery = z.infer<typeof projectListQuerySchema>;

export const projectCreateQuerySchema = z.object({ upsert: queryBool.optional() });
export const projectGetQuerySchema = z.object({ include_stats: queryBool.optional(), stats_start_time: timestamp.optional() });
export const projectIdParamSchema = z.object({ session_id: uuid });

export const projectSchema = z.object({
  id: z.string(),
  tenant_id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  extra: jsonObject.nullable(),
  start_time: z.string(),
  end_time: z.string().nullable(),
  reference_dataset_id: z.string().nullable(),
  default_dataset_id: z.string().nullable(),
  trace_tier: z.string().nullable(),
  created_at: z.string(),
  modified_at: z.string(),
  run_count: z.number().nullable().optional(),
  latency_p50: z.number().nullable().optional(),
  latency_p99: z.number().nullable().optional(),
  first_token_p50: z.number().nullable().optional(),
  first_token_p99: z.number().nullable().optional(),
  total_tokens: z.number().nullable().optional(),
  prompt_tokens: z.number().nullable().optional(),
  completion_tokens: z.number().nullable().optional(),
  total_cost: z.number().nullable().optional(),
  prompt_cost: z.number().nullable().optional(),
  completion_cost: z.number().nullable().optional(),
  error_rate: z.number().nullable().optional(),
  streaming_rate: z.number().nullable().optional(),
  last_run_start_time: z.string().nullable().optional(),
  feedback_stats: jsonObject.nullable().optional(),
  /** Project-level feedback (run_id null), e.g. summary evaluator scores. */
  session_feedback_stats: jsonObject.nullable().optional(),
});
export type Project = z.infer<typeof projectSchema>;

/** Internal: ingest asks the query service to resolve project names to ids (creating missing ones). */
export const projectResolveRequestSchema = z.object({
  names: z.array(z.string().min(1).max(1024)).max(1000).default([]),
  ids: z.array(uuid).max(1000).default([]),
});
export const projectResolveResponseSchema = z.object({
  by_name: z.record(z.string(), z.string()),
  missing_ids: z.array(z.string()),
});
export type ProjectResolveRequest = z.infer<typeof projectResolveRequestSchema>;
export type ProjectResolveResponse = z.infer<typeof projectResolveResponseSchema>;
