import { z } from 'zod';
import {
  bulkExportCreateSchema,
  bulkExportListQuerySchema,
  bulkExportSchema,
  bulkExportUpdateSchema,
  exportDestinationCreateSchema,
  exportDestinationSchema,
  exportDestinationUpdateSchema,
  auditChainVerificationSchema,
  auditLogsQuerySchema,
  auditLogsResponseSchema,
  errorBodySchema,
  exampleWithRunsSchema,
  experimentCompareRequestSchema,
  experimentCompareResponseSchema,
  experimentUploadRequestSchema,
  experimentUploadResponseSchema,
  feedbackConfigCreateSchema,
  feedbackConfigDeleteQuerySchema,
  feedbackConfigListQuerySchema,
  feedbackConfigRecordSchema,
  feedbackConfigUpdateSchema,
  feedbackCreateSchema,
  feedbackListQuerySchema,
  feedbackSchema,
  feedbackUpdateSchema,
  httpValidationErrorSchema,
  modelPriceMapCreateSchema,
  modelPriceMapSchema,
  modelPriceMapUpdateSchema,
  otlpTraceRequestSchema,
  infoSchema,
  projectCreateSchema,
  projectListQuerySchema,
  projectGetQuerySchema,
  projectSchema,
  experimentSchema,
  projectUpdateSchema,
  runBatchSchema,
  runCreateSchema,
  runQueryResponseSchema,
  runQuerySchema,
  runResponseSchema,
  runStatsQuerySchema,
  runStatsSchema,
  runUpdateSchema,
} from '@th/contracts';
import { ADMIN_ROUTES } from './admin.routes';
import { DATASETS_ROUTES } from './datasets.routes';
import { PROMPT_HUB_ROUTES } from './prompt-hub.routes';
import { V2_ROUTES } from './v2.routes';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  tag: string;
  body?: z.ZodTypeAny;
  bodyType?: 'json' | 'multipart';
  /** The parts of a multipart body (default: the summary). */
  parts?: string;
  query?: z.ZodObject<z.ZodRawShape>;
  responses: Record<number, z.ZodTypeAny | null>;
  public?: boolean;
}

const accepted = z.object({}).passthrough();
/** A project as listed or read: with include_stats, the experiment shape (the project plus its run statistics). */
const projectWithStats = z.union([projectSchema, experimentSchema]);
const errors = { 401: errorBodySchema, 413: errorBodySchema, 422: httpValidationErrorSchema };

/** Every public route of the gateway, documented from libs/contracts. */
export const ROUTES: RouteDoc[] = [
  { method: 'get', path: '/info', summary: 'Server info for SDKs', tag: 'meta', responses: { 200: infoSchema }, public: true },
  { method: 'get', path: '/ok', summary: 'Connectivity check', tag: 'meta', responses: { 200: z.object({ ok: z.literal(true) }) }, public: true },
  { method: 'post', path: '/api/v1/runs', summary: 'Create a run', tag: 'runs', body: runCreateSchema, responses: { 202: accepted, ...errors } },
  { method: 'patch', path: '/api/v1/runs/{run_id}', summary: 'Update a run', tag: 'runs', body: runUpdateSchema, responses: { 202: accepted, ...errors } },
  { method: 'post', path: '/api/v1/runs/batch', summary: 'Create and update runs in one request', tag: 'runs', body: runBatchSchema, responses: { 202: accepted, ...errors } },
  {
    method: 'post',
    path: '/api/v1/runs/multipart',
    summary: 'Create and update runs, with attachments, as multipart/form-data (gzip or zstd allowed)',
    tag: 'runs',
    bodyType: 'multipart',
    parts: 'Parts: post.<run_id>, post.<run_id>.<inputs|outputs|events|extra|error|serialized>, patch.<run_id>[.<field>], attachment.<run_id>.<name>',
    responses: { 202: accepted, ...errors, 415: errorBodySchema },
  },
  { method: 'get', path: '/api/v1/runs/{run_id}', summary: 'Read a run', tag: 'runs', responses: { 200: runResponseSchema, 404: errorBodySchema, 401: errorBodySchema } },
  { method: 'post', path: '/api/v1/runs/query', summary: 'Query runs', tag: 'runs', body: runQuerySchema, responses: { 200: runQueryResponseSchema, ...errors } },
  { method: 'post', path: '/api/v1/runs/stats', summary: 'Aggregate run statistics', tag: 'runs', body: runStatsQuerySchema, responses: { 200: runStatsSchema, ...errors } },
  { method: 'post', path: '/api/v1/sessions', summary: 'Create a tracing project', tag: 'projects', body: projectCreateSchema, responses: { 200: projectSchema, 409: errorBodySchema, ...errors } },
  { method: 'get', path: '/api/v1/sessions', summary: 'List tracing projects (with include_stats: each with its run statistics)', tag: 'projects', query: projectListQuerySchema, responses: { 200: z.array(projectWithStats), ...errors } },
  {
    method: 'get',
    path: '/api/v1/sessions/{session_id}',
    summary: 'Read a tracing project (with include_stats: with its run statistics)',
    tag: 'projects',
    query: projectGetQuerySchema,
    responses: { 200: projectWithStats, 404: errorBodySchema },
  },
  { method: 'patch', path: '/api/v1/sessions/{session_id}', summary: 'Update a tracing project', tag: 'projects', body: projectUpdateSchema, responses: { 200: projectSchema, 404: errorBodySchema, ...errors } },
  { method: 'delete', path: '/api/v1/sessions/{session_id}', summary: 'Delete a tracing project and its runs', tag: 'projects', responses: { 202: accepted, 404: errorBodySchema } },
  { method: 'post', path: '/api/v1/feedback', summary: 'Create feedback on a run or a project (feedback_config enforced)', tag: 'feedback', body: feedbackCreateSchema, responses: { 200: feedbackSchema, 409: errorBodySchema, ...errors } },
  {
    method: 'post',
    path: '/api/v1/datasets/upload-experiment',
    summary: 'Upload an experiment run elsewhere: each row becomes an example and a run, scores become feedback (statistics null until read again)',
    tag: 'experiments',
    body: experimentUploadRequestSchema,
    responses: { 200: experimentUploadResponseSchema, 400: errorBodySchema, 409: errorBodySchema, ...errors },
  },
  {
    method: 'post',
    path: '/api/v1/datasets/{dataset_id}/runs',
    summary: "A page of the dataset's examples, each with the chosen experiments' runs and their feedback side by side",
    tag: 'experiments',
    body: experimentCompareRequestSchema,
    responses: { 200: z.array(exampleWithRunsSchema), 400: errorBodySchema, 404: errorBodySchema, ...errors },
  },
  {
    method: 'post',
    path: '/api/v1/datasets/{dataset_id}/compare',
    summary: 'Compare experiments on a dataset: the experiments with their aggregates, and the examples with their runs side by side',
    tag: 'experiments',
    body: experimentCompareRequestSchema,
    responses: { 200: experimentCompareResponseSchema, 400: errorBodySchema, 404: errorBodySchema, ...errors },
  },
  { method: 'get', path: '/api/v1/feedback', summary: 'List feedback (by run, trace, session, key, source)', tag: 'feedback', query: feedbackListQuerySchema, responses: { 200: z.array(feedbackSchema), ...errors } },
  { method: 'get', path: '/api/v1/feedback/{feedback_id}', summary: 'Read feedback', tag: 'feedback', responses: { 200: feedbackSchema, 404: errorBodySchema, 401: errorBodySchema } },
  { method: 'patch', path: '/api/v1/feedback/{feedback_id}', summary: 'Update feedback', tag: 'feedback', body: feedbackUpdateSchema, responses: { 200: feedbackSchema, 404: errorBodySchema, ...errors } },
  { method: 'delete', path: '/api/v1/feedback/{feedback_id}', summary: 'Delete feedback', tag: 'feedback', responses: { 200: accepted, 404: errorBodySchema, 401: errorBodySchema } },
  { method: 'get', path: '/api/v1/feedback-configs', summary: "The workspace's feedback configs (one per feedback key), optionally only the given keys", tag: 'feedback', query: feedbackConfigListQuerySchema, responses: { 200: z.array(feedbackConfigRecordSchema), ...errors } },
  {
    method: 'post',
    path: '/api/v1/feedback-configs',
    summary: "Create a feedback key's config (enforced on POST /feedback without its own); an identical repeat returns it, a different one is 409",
    tag: 'feedback',
    body: feedbackConfigCreateSchema,
    responses: { 200: feedbackConfigRecordSchema, 409: errorBodySchema, ...errors },
  },
  { method: 'patch', path: '/api/v1/feedback-configs', summary: "Change a feedback key's config", tag: 'feedback', body: feedbackConfigUpdateSchema, responses: { 200: feedbackConfigRecordSchema, 404: errorBodySchema, ...errors } },
  { method: 'delete', path: '/api/v1/feedback-configs', summary: "Delete a feedback key's config", tag: 'feedback', query: feedbackConfigDeleteQuerySchema, responses: { 200: accepted, 404: errorBodySchema, ...errors } },
  ...['/api/v1/otel/v1/traces', '/api/v1/otel'].map(
    (path): RouteDoc => ({
      method: 'post',
      path,
      summary: `OpenTelemetry traces (OTLP/HTTP): application/x-protobuf or application/json, gzip allowed; spans become runs (GenAI conventions). The Langsmith-Project header names the project.${path.endsWith('/otel') ? " The same endpoint, where the Python SDK's OTEL mode sends." : ''}`,
      tag: 'otel',
      body: otlpTraceRequestSchema,
      responses: { 200: z.object({ partialSuccess: z.object({}).passthrough() }), ...errors, 415: errorBodySchema },
    }),
  ),
  { method: 'get', path: '/api/v1/model-price-map', summary: "The workspace's model price maps, then the default table (tenant_id null)", tag: 'prices', responses: { 200: z.array(modelPriceMapSchema), 401: errorBodySchema } },
  { method: 'post', path: '/api/v1/model-price-map', summary: 'Create a model price map (prices per token; match_pattern is a regular expression)', tag: 'prices', body: modelPriceMapCreateSchema, responses: { 200: modelPriceMapSchema, ...errors } },
  ...(['put', 'patch'] as const).map((method): RouteDoc => ({
    method,
    path: '/api/v1/model-price-map/{id}',
    summary: 'Update a model price map: any subset of the create fields (PUT and PATCH are the same operation)',
    tag: 'prices',
    body: modelPriceMapUpdateSchema,
    responses: { 200: modelPriceMapSchema, 404: errorBodySchema, ...errors },
  })),
  { method: 'delete', path: '/api/v1/model-price-map/{id}', summary: 'Delete a model price map', tag: 'prices', responses: { 200: accepted, 404: errorBodySchema, 401: errorBodySchema } },
  {
    method: 'get',
    path: '/api/v1/audit-logs',
    summary: 'Audit log events (OCSF 1.7.0 API Activity, class 6003) of the organization named by X-Organization-Id, oldest first; start_time inclusive, end_time exclusive; page with next_cursor. Enterprise plan, audit logs enabled, organization:manage.',
    tag: 'audit',
    query: auditLogsQuerySchema,
    responses: { 200: auditLogsResponseSchema, 401: errorBodySchema, 403: errorBodySchema, 422: httpValidationErrorSchema },
  },
  {
    method: 'get',
    path: '/api/v1/audit-logs/verify',
    summary: "Checks the organization's audit hash chain from its anchor to its head and reports the first break",
    tag: 'audit',
    responses: { 200: auditChainVerificationSchema, 401: errorBodySchema, 403: errorBodySchema },
  },
  {
    method: 'post',
    path: '/api/v1/bulk-exports/destinations',
    summary: 'Create a bulk-export destination (S3-compatible bucket); validated by writing and removing a small object first. Plus or Enterprise plan',
    tag: 'bulk-exports',
    body: exportDestinationCreateSchema,
    responses: { 200: exportDestinationSchema, 400: errorBodySchema, 403: errorBodySchema, ...errors },
  },
  { method: 'get', path: '/api/v1/bulk-exports/destinations', summary: 'List bulk-export destinations (credentials are never returned)', tag: 'bulk-exports', query: bulkExportListQuerySchema, responses: { 200: z.array(exportDestinationSchema), 403: errorBodySchema, ...errors } },
  { method: 'get', path: '/api/v1/bulk-exports/destinations/{destination_id}', summary: 'Read a bulk-export destination', tag: 'bulk-exports', responses: { 200: exportDestinationSchema, 403: errorBodySchema, 404: errorBodySchema, ...errors } },
  {
    method: 'patch',
    path: '/api/v1/bulk-exports/destinations/{destination_id}',
    summary: 'Update a bulk-export destination; changed config or credentials are validated against the bucket again',
    tag: 'bulk-exports',
    body: exportDestinationUpdateSchema,
    responses: { 200: exportDestinationSchema, 400: errorBodySchema, 403: errorBodySchema, 404: errorBodySchema, ...errors },
  },
  {
    method: 'post',
    path: '/api/v1/bulk-exports',
    summary: 'Create a bulk export of a project\'s runs as Parquet: one-time (start_time inclusive, end_time exclusive) or scheduled (interval_hours 1..168, no end_time)',
    tag: 'bulk-exports',
    body: bulkExportCreateSchema,
    responses: { 200: bulkExportSchema, 403: errorBodySchema, 404: errorBodySchema, ...errors },
  },
  { method: 'get', path: '/api/v1/bulk-exports', summary: 'List bulk exports, newest first', tag: 'bulk-exports', query: bulkExportListQuerySchema, responses: { 200: z.array(bulkExportSchema), 403: errorBodySchema, ...errors } },
  { method: 'get', path: '/api/v1/bulk-exports/{export_id}', summary: 'Read a bulk export: status, rows and files written', tag: 'bulk-exports', responses: { 200: bulkExportSchema, 403: errorBodySchema, 404: errorBodySchema, ...errors } },
  {
    method: 'patch',
    path: '/api/v1/bulk-exports/{export_id}',
    summary: 'Cancel a bulk export with {"status": "CANCELLED"}; cancelling a scheduled export stops spawning and leaves spawned exports alone',
    tag: 'bulk-exports',
    body: bulkExportUpdateSchema,
    responses: { 200: bulkExportSchema, 403: errorBodySchema, 404: errorBodySchema, 409: errorBodySchema, ...errors },
  },
  { method: 'post', path: '/api/v1/bulk-exports/{export_id}/cancel', summary: 'Cancel a bulk export', tag: 'bulk-exports', responses: { 200: bulkExportSchema, 403: errorBodySchema, 404: errorBodySchema, 409: errorBodySchema, ...errors } },
  {
    method: 'get',
    path: '/api/v1/bulk-exports/{export_id}/runs',
    summary: 'The exports a scheduled export spawned (source_bulk_export_id set), newest window first',
    tag: 'bulk-exports',
    query: bulkExportListQuerySchema,
    responses: { 200: z.array(bulkExportSchema), 403: errorBodySchema, 404: errorBodySchema, ...errors },
  },
  ...ADMIN_ROUTES,
  ...DATASETS_ROUTES,
  ...PROMPT_HUB_ROUTES,
  ...V2_ROUTES,
];
