import { z } from 'zod';
import { feedbackConfigSchema, feedbackConfigProblems } from './feedback.schema';
import type { ValidationErrorItem } from './common.schema';

const feedbackKey = z.string().min(1).max(180);

/** A config that is valid on its own (min <= max, a categorical one has categories). */
const validConfig = feedbackConfigSchema.superRefine((c, ctx) => {
  for (const p of feedbackConfigProblems({ feedback_config: c }) as ValidationErrorItem[]) {
    ctx.addIssue({ code: 'custom', message: p.msg, path: [] });
  }
});

/** POST /feedback-configs: the workspace's config of one feedback key. */
export const feedbackConfigCreateSchema = z
  .object({
    feedback_key: feedbackKey,
    feedback_config: validConfig,
    is_lower_score_better: z.boolean().nullish(),
  })
  .strict();
export type FeedbackConfigCreate = z.infer<typeof feedbackConfigCreateSchema>;

/** PATCH /feedback-configs: the key names the config; given fields replace the stored ones. */
export const feedbackConfigUpdateSchema = z
  .object({
    feedback_key: feedbackKey,
    feedback_config: validConfig.nullish(),
    is_lower_score_better: z.boolean().nullish(),
  })
  .strict();
export type FeedbackConfigUpdate = z.infer<typeof feedbackConfigUpdateSchema>;

const keyList = z.preprocess((v) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]), z.array(feedbackKey).max(100).optional());

/** GET /feedback-configs?key=a&key=b&name_contains=..&limit=..&offset=.. (the SDK pages with limit and offset). */
export const feedbackConfigListQuerySchema = z
  .object({
    key: keyList,
    name_contains: z.string().max(180).optional(),
    limit: z.coerce.number().int().min(1).max(100).default(100),
    offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  })
  .strict();
export type FeedbackConfigListQuery = z.infer<typeof feedbackConfigListQuerySchema>;

/** DELETE /feedback-configs?feedback_key=... */
export const feedbackConfigDeleteQuerySchema = z.object({ feedback_key: feedbackKey }).strict();

/** The stored config of one feedback key in one workspace. */
export const feedbackConfigRecordSchema = z.object({
  feedback_key: z.string(),
  feedback_config: feedbackConfigSchema,
  tenant_id: z.string(),
  modified_at: z.string(),
  is_lower_score_better: z.boolean().nullable(),
});
export type FeedbackConfigRecord = z.infer<typeof feedbackConfigRecordSchema>;
