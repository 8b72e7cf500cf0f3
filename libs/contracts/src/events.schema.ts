import { z } from 'zod';
import { jsonObject } from './common.schema';

/**
 * One run write as it travels from ingest to the writer: only the fields the client supplied.
 * Timestamps are ISO strings with microseconds. Evolve additively: old writers must still parse.
 */
export const runEventSchema = z.object({
  kind: z.literal('run'),
  op: z.enum(['post', 'patch']),
  tenant_id: z.string(),
  id: z.string(),
  /** Monotonic per ingest process; breaks no ties, only helps debugging. */
  received_at: z.string(),
  fields: z.object({
    session_id: z.string().optional(),
    trace_id: z.string().optional(),
    parent_run_id: z.string().nullable().optional(),
    dotted_order: z.string().optional(),
    name: z.string().optional(),
    run_type: z.string().optional(),
    start_time: z.string().optional(),
    end_time: z.string().nullable().optional(),
    inputs: jsonObject.nullable().optional(),
    outputs: jsonObject.nullable().optional(),
    extra: jsonObject.nullable().optional(),
    events: z.array(jsonObject).nullable().optional(),
    error: z.string().nullable().optional(),
    serialized: jsonObject.nullable().optional(),
    tags: z.array(z.string()).nullable().optional(),
    reference_example_id: z.string().nullable().optional(),
    trace_tier: z.string().nullable().optional(),
    /** Set by ingest, never by clients: the workspace's retention in days per trace_tier (the row's expires_at). */
    retention_days: z.record(z.string(), z.number().int().positive()).optional(),
  }),
  attachments: z
    .array(z.object({ name: z.string(), mime_type: z.string(), data_base64: z.string() }))
    .optional(),
});
export type RunEvent = z.infer<typeof runEventSchema>;
export type RunEventFields = RunEvent['fields'];

/** Control messages on the runs topic (e.g. a deleted project's runs). */
export const runControlEventSchema = z.object({
  kind: z.literal('delete_session'),
  tenant_id: z.string(),
  session_id: z.string(),
});
export type RunControlEvent = z.infer<typeof runControlEventSchema>;
