import { z } from 'zod';
import { runEventSchema, runControlEventSchema } from './events.schema';
import { auditRecordSchema } from './audit.schema';
import { exportJobEventSchema } from './export.schema';
import { deploymentCreatedEventSchema } from './control-plane.schema';
import { feedbackEventSchema } from './feedback.schema';
import { workspaceChangedEventSchema } from './admin.schema';

/** Every bus topic and the payload it carries. Publishing is typed by topic. */
export const TOPICS = {
  runs: 'runs',
  runsDeadLetter: 'runs.dlq',
  feedback: 'feedback',
  audit: 'audit',
  deployments: 'deployments',
  exports: 'exports',
  workspaces: 'workspaces',
} as const;
export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

export const deadLetterSchema = z.object({
  topic: z.string(),
  partition: z.number().nullable(),
  offset: z.string().nullable(),
  key: z.string().nullable(),
  reason: z.string(),
  value: z.string(),
  failed_at: z.string(),
});
export type DeadLetter = z.infer<typeof deadLetterSchema>;

export const topicPayloadSchemas = {
  runs: z.union([runEventSchema, runControlEventSchema]),
  'runs.dlq': deadLetterSchema,
  feedback: feedbackEventSchema,
  audit: auditRecordSchema,
  deployments: deploymentCreatedEventSchema,
  exports: exportJobEventSchema,
  workspaces: workspaceChangedEventSchema,
} satisfies Record<TopicName, z.ZodTypeAny>;

export type TopicPayload<T extends TopicName> = z.infer<(typeof topicPayloadSchemas)[T]>;
