import { z } from 'zod';
import { jsonObject, timestamp, toEpochMicros, uuid } from './common.schema';
import { datasetSchema } from './dataset.schema';
import { feedbackConfigProblems, feedbackConfigSchema, feedbackSchema } from './feedback.schema';
import { projectSchema } from './project.schema';

/** The upload's feedback object (evaluation_scores of a row, summary_experiment_scores of the experiment). */
export const uploadFeedbackSchema = z
  .object({
    key: z.string().min(1).max(180),
    score: z.union([z.number(), z.boolean()]).transform((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v)).nullish(),
    /** The spec types value as a string; numbers and booleans are kept as JSON, as POST /feedback does. */
    value: z.union([z.string(), z.number(), z.boolean(), jsonObject]).nullish(),
    comment: z.string().nullish(),
    feedback_source: z.object({ type: z.string().min(1) }).catchall(z.unknown()).nullish(),
    feedback_config: feedbackConfigSchema.nullish(),
    created_at: timestamp.nullish(),
    modified_at: timestamp.nullish(),
    correction: z.union([jsonObject, z.string()]).nullish(),
  })
  .superRefine((f, ctx) => {
    for (const p of feedbackConfigProblems(f)) ctx.addIssue({ code: 'custom', path: p.loc, message: p.msg });
  });
export type UploadFeedback = z.infer<typeof uploadFeedbackSchema>;

/** One row: one dataset example plus one run. */
export const uploadRowSchema = z.object({
  row_id: uuid,
  inputs: jsonObject,
  expected_outputs: jsonObject.nullish(),
  actual_outputs: jsonObject.nullish(),
  evaluation_scores: z.array(uploadFeedbackSchema).max(1000).nullish(),
  start_time: timestamp,
  end_time: timestamp,
  run_name: z.string().min(1).nullish(),
  error: z.string().nullish(),
  run_metadata: jsonObject.nullish(),
});
export type UploadRow = z.infer<typeof uploadRowSchema>;

export const EXPERIMENT_UPLOAD_MAX_ROWS = 50_000;

const micros = (v: string) => toEpochMicros(v) ?? 0;

/**
 * POST /datasets/upload-experiment. The spec's numbered rules that a body alone decides are checked
 * here (rule 1: row times within the experiment; rule 2: dataset_id or dataset_name), each issue
 * naming its rule; the rules that need stored state (rule 3) are checked by the service.
 */
export const experimentUploadRequestSchema = z
  .object({
    experiment_name: z.string().min(1).max(1024),
    experiment_description: z.string().nullish(),
    experiment_start_time: timestamp,
    experiment_end_time: timestamp,
    dataset_id: uuid.nullish(),
    dataset_name: z.string().min(1).max(1024).nullish(),
    dataset_description: z.string().nullish(),
    experiment_metadata: jsonObject.nullish(),
    summary_experiment_scores: z.array(uploadFeedbackSchema).max(1000).nullish(),
    results: z.array(uploadRowSchema).max(EXPERIMENT_UPLOAD_MAX_ROWS),
  })
  .superRefine((b, ctx) => {
    if (!b.dataset_id && !b.dataset_name) {
      ctx.addIssue({ code: 'custom', path: ['dataset_id'], message: 'Rule 2: one of dataset_id or dataset_name is required' });
    }
    const start = micros(b.experiment_start_time);
    const end = micros(b.experiment_end_time);
    if (start > end) {
      ctx.addIssue({ code: 'custom', path: ['experiment_end_time'], message: 'experiment_end_time is before experiment_start_time' });
      return;
    }
    const seen = new Set<string>();
    b.results.forEach((r, i) => {
      const rs = micros(r.start_time);
      const re = micros(r.end_time);
      if (rs > re) ctx.addIssue({ code: 'custom', path: ['results', i, 'end_time'], message: 'Row end_time is before its start_time' });
      if (rs < start || rs > end) {
        ctx.addIssue({ code: 'custom', path: ['results', i, 'start_time'], message: `Rule 1: row start_time ${r.start_time} is outside the experiment times [${b.experiment_start_time}, ${b.experiment_end_time}]` });
      }
      if (re < start || re > end) {
        ctx.addIssue({ code: 'custom', path: ['results', i, 'end_time'], message: `Rule 1: row end_time ${r.end_time} is outside the experiment times [${b.experiment_start_time}, ${b.experiment_end_time}]` });
      }
      if (seen.has(r.row_id)) ctx.addIssue({ code: 'custom', path: ['results', i, 'row_id'], message: `row_id ${r.row_id} appears more than once in results` });
      seen.add(r.row_id);
    });
  });
export type ExperimentUploadRequest = z.infer<typeof experimentUploadRequestSchema>;

const stat = z.number().nullable();

/** The spec's experiment object: a tracing project with a reference dataset, with every statistic. */
export const experimentSchema = projectSchema.extend({
  run_count: stat,
  latency_p50: stat,
  latency_p99: stat,
  first_token_p50: stat,
  first_token_p99: stat,
  total_tokens: stat,
  prompt_tokens: stat,
  completion_tokens: stat,
  total_cost: stat,
  prompt_cost: stat,
  completion_cost: stat,
  error_rate: stat,
  streaming_rate: stat,
  last_run_start_time: z.string().nullable(),
  /** The newest run start among runs still being written; the same read as last_run_start_time here (no separate live store). */
  last_run_start_time_live: z.string().nullable(),
  feedback_stats: jsonObject.nullable(),
  session_feedback_stats: jsonObject.nullable(),
  /** Facets of the runs (filterable keys); not computed, always null. */
  run_facets: z.array(jsonObject).nullable(),
  /** 1 for the first experiment on its reference dataset, 2 for the second..., by creation order; null without a dataset. */
  test_run_number: z.number().int().nullable(),
});
export type Experiment = z.infer<typeof experimentSchema>;

/** The statistics fields of an experiment, null in the immediate upload response. */
export const EXPERIMENT_STAT_FIELDS = [
  'run_count', 'latency_p50', 'latency_p99', 'first_token_p50', 'first_token_p99', 'total_tokens', 'prompt_tokens', 'completion_tokens',
  'total_cost', 'prompt_cost', 'completion_cost', 'error_rate', 'streaming_rate', 'last_run_start_time', 'last_run_start_time_live',
  'feedback_stats', 'session_feedback_stats', 'run_facets',
] as const;

export const experimentUploadResponseSchema = z.object({
  experiment: experimentSchema,
  /** The dataset object: externally_managed and created_by_upload true. */
  dataset: datasetSchema,
});
export type ExperimentUploadResponse = z.infer<typeof experimentUploadResponseSchema>;

/**
 * Comparing experiments on one dataset, as LangSmith's POST /datasets/{id}/runs: the chosen
 * experiments' runs of each example side by side.
 */
export const experimentCompareRequestSchema = z.object({
  session_ids: z.array(uuid).min(1).max(50),
  example_ids: z.array(uuid).max(1000).nullish(),
  offset: z.number().int().min(0).default(0),
  limit: z.number().int().min(1).max(1000).default(100),
});
export type ExperimentCompareRequest = z.infer<typeof experimentCompareRequestSchema>;
export const compareDatasetParamSchema = z.object({ dataset_id: uuid });

/** A run of one experiment on one example, with its feedback. */
export const compareRunSchema = jsonObject.and(
  z.object({ id: z.string(), session_id: z.string(), feedback_stats: jsonObject.nullable(), feedback: z.array(feedbackSchema) }),
);
export const exampleWithRunsSchema = jsonObject.and(z.object({ id: z.string(), runs: z.array(compareRunSchema) }));
export type ExampleWithRuns = z.infer<typeof exampleWithRunsSchema>;

export const experimentCompareResponseSchema = z.object({
  /** The chosen experiments in the requested order, each with its aggregates over the whole dataset. */
  experiments: z.array(experimentSchema),
  examples: z.array(exampleWithRunsSchema),
});
export type ExperimentCompareResponse = z.infer<typeof experimentCompareResponseSchema>;

// --- comparative (pairwise) experiments --------------------------------------------------------------

/** POST /datasets/comparative: experiments of one dataset compared pairwise (the SDKs' evaluate_comparative). */
export const comparativeExperimentCreateSchema = z
  .object({
    id: uuid.nullish(),
    name: z.string().trim().min(1).max(400).nullish(),
    description: z.string().max(10_000).nullish(),
    experiment_ids: z.array(uuid).min(2).max(20).refine((ids) => new Set(ids).size === ids.length, 'each experiment may appear once'),
    reference_dataset_id: uuid,
    created_at: timestamp.nullish(),
    modified_at: timestamp.nullish(),
    extra: jsonObject.nullish(),
  })
  .strict();
export type ComparativeExperimentCreate = z.infer<typeof comparativeExperimentCreateSchema>;

export const comparativeExperimentSchema = z.object({
  id: uuid,
  name: z.string().nullable(),
  description: z.string().nullable(),
  tenant_id: uuid,
  created_at: z.string(),
  modified_at: z.string(),
  reference_dataset_id: uuid,
  extra: jsonObject.nullable(),
  experiments_info: z.array(z.object({ id: uuid, name: z.string() })),
  /** Per key, over the pairwise feedback (comparative_experiment_id): count, mean score, value counts; null without any. */
  feedback_stats: jsonObject.nullable(),
});
export type ComparativeExperiment = z.infer<typeof comparativeExperimentSchema>;

export const comparativeExperimentIdParamSchema = z.object({ comparative_experiment_id: uuid });
export const comparativeExperimentListQuerySchema = z.object({
  name_contains: z.string().max(400).optional(),
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(100),
});
export type ComparativeExperimentListQuery = z.infer<typeof comparativeExperimentListQuerySchema>;
