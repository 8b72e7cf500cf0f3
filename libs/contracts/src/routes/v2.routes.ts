import { z } from 'zod';
import { errorBodySchema, httpValidationErrorSchema } from '../common.schema';
import { datasetSchema } from '../dataset.schema';
import { projectSchema } from '../project.schema';
import { runQueryResponseSchema, runResponseSchema } from '../run.schema';
import { publicRunQuerySchema, runShareCreateSchema, runShareSchema, v2CursorPageQuerySchema, v2ExperimentRunQuerySchema, v2PageSchema, v2PublicRunGetQuerySchema, v2PublicRunQuerySchema, v2RunGetQuerySchema, v2RunQuerySchema, v2RunSchema, v2RunShareCreateSchema, v2RunShareDeleteSchema, v2RunUrlQuerySchema, v2ThreadQuerySchema, v2ThreadShareSchema, v2ThreadsAggregateStatsSchema, v2ThreadStatsQuerySchema, v2ThreadTracesQuerySchema, v2TraceQuerySchema, v2TraceRunsQuerySchema } from '../v2.schema';
import type { RouteSpec } from './route';

const errors = { 401: errorBodySchema, 404: errorBodySchema, 422: httpValidationErrorSchema };
const publicErrors = { 404: errorBodySchema, 422: httpValidationErrorSchema };
const obj = z.object({}).passthrough();
const token = z.object({ share_token: z.string() });
const trace = z.object({ root_run: v2RunSchema, trace_aggregates: obj });

/** The SDKs' generated (v2) REST client and run sharing, served by the query service. */
export const V2_ROUTES: Omit<RouteSpec, 'service'>[] = [
  { method: 'post', path: '/api/v2/runs/query', summary: 'Runs of projects (or a dataset’s experiments) in a time window, with selects and cursor pages', tag: 'v2', body: v2RunQuerySchema, responses: { 200: v2PageSchema(v2RunSchema), ...errors } },
  { method: 'get', path: '/api/v2/runs/{run_id}', summary: 'One run of a project, its selected properties', tag: 'v2', query: v2RunGetQuerySchema, responses: { 200: v2RunSchema, ...errors } },
  { method: 'get', path: '/api/v2/runs/{run_id}/url', summary: 'The web app’s URL of a run', tag: 'v2', query: v2RunUrlQuerySchema, responses: { 200: z.object({ url: z.string() }), ...errors } },
  { method: 'post', path: '/api/v2/runs/{run_id}/share', summary: 'Share the run’s trace by a public token (idempotent)', tag: 'v2', body: v2RunShareCreateSchema, responses: { 200: token, ...errors } },
  { method: 'delete', path: '/api/v2/runs/{trace_id}/share', summary: 'Unshare a trace (its token stops working at once; idempotent)', tag: 'v2', body: v2RunShareDeleteSchema, responses: { 204: null, ...errors } },
  { method: 'post', path: '/api/v2/traces/query', summary: 'Traces of a project: each root run with the sums over its runs, in cursor pages', tag: 'v2', body: v2TraceQuerySchema, responses: { 200: v2PageSchema(trace), ...errors } },
  { method: 'get', path: '/api/v2/traces/{trace_id}/runs', summary: 'Every run of a trace, oldest first', tag: 'v2', query: v2TraceRunsQuerySchema, responses: { 200: z.object({ items: z.array(v2RunSchema) }), ...errors } },
  { method: 'post', path: '/api/v2/threads/query', summary: 'Threads of a project (traces grouped by metadata session_id, conversation_id or thread_id), newest first', tag: 'v2', body: v2ThreadQuerySchema, responses: { 200: v2PageSchema(obj), ...errors } },
  { method: 'post', path: '/api/v2/threads/stats', summary: 'Aggregates over the threads of a project', tag: 'v2', body: v2ThreadsAggregateStatsSchema, responses: { 200: obj, ...errors } },
  { method: 'get', path: '/api/v2/threads/{thread_id}/traces', summary: 'A thread’s traces by turn, in cursor pages', tag: 'v2', query: v2ThreadTracesQuerySchema, responses: { 200: v2PageSchema(obj), ...errors } },
  { method: 'get', path: '/api/v2/threads/{thread_id}/stats', summary: 'Aggregates of one thread (turns, times, latency, tokens, cost)', tag: 'v2', query: v2ThreadStatsQuerySchema, responses: { 200: obj, ...errors } },
  { method: 'post', path: '/api/v2/threads/{thread_id}/share', summary: 'Share a thread by a public token (idempotent)', tag: 'v2', body: v2ThreadShareSchema, responses: { 200: token, ...errors } },
  { method: 'get', path: '/api/v2/threads/{thread_id}/share', summary: 'A thread’s share token (404 when not shared)', tag: 'v2', query: v2ThreadShareSchema, responses: { 200: token, ...errors } },
  { method: 'delete', path: '/api/v2/threads/{thread_id}/share', summary: 'Unshare a thread', tag: 'v2', query: v2ThreadShareSchema, responses: { 204: null, ...errors } },
  { method: 'get', path: '/api/v2/sessions', summary: 'Projects in cursor pages (the classic list’s filters)', tag: 'v2', query: v2CursorPageQuerySchema, responses: { 200: v2PageSchema(projectSchema.extend({ type: z.string() })), ...errors } },
  { method: 'get', path: '/api/v2/datasets', summary: 'Datasets in cursor pages (the classic list’s filters)', tag: 'v2', query: v2CursorPageQuerySchema, responses: { 200: v2PageSchema(datasetSchema), ...errors } },
  { method: 'post', path: '/api/v2/datasets/{dataset_id}/experiment-runs', summary: 'A dataset’s examples, each with the runs of the chosen experiments, in cursor pages', tag: 'v2', body: v2ExperimentRunQuerySchema, responses: { 200: v2PageSchema(obj), ...errors } },
  { method: 'get', path: '/api/v2/public/{share_token}/run/{run_id}', summary: 'A shared run, read without an API key', tag: 'v2', query: v2PublicRunGetQuerySchema, responses: { 200: v2RunSchema, ...publicErrors }, public: true },
  { method: 'post', path: '/api/v2/public/{share_token}/runs/query', summary: 'The shared runs, read without an API key', tag: 'v2', body: v2PublicRunQuerySchema, responses: { 200: z.object({ items: z.array(v2RunSchema) }), ...publicErrors }, public: true },
  { method: 'put', path: '/api/v1/runs/{run_id}/share', summary: 'Share a run (with its subtree) by a public token (the classic SDKs’ share_run; idempotent)', tag: 'runs', body: runShareCreateSchema, responses: { 200: runShareSchema, ...errors } },
  { method: 'get', path: '/api/v1/runs/{run_id}/share', summary: 'A run’s share (null when not shared)', tag: 'runs', responses: { 200: runShareSchema.nullable(), ...errors } },
  { method: 'delete', path: '/api/v1/runs/{run_id}/share', summary: 'Unshare a run', tag: 'runs', responses: { 200: obj, ...errors } },
  { method: 'get', path: '/api/v1/public/{share_token}/run', summary: 'The shared run, read without an API key', tag: 'runs', responses: { 200: runResponseSchema.partial(), ...publicErrors }, public: true },
  { method: 'get', path: '/api/v1/public/{share_token}/run/{run_id}', summary: 'A run of the shared subtree, read without an API key', tag: 'runs', responses: { 200: runResponseSchema.partial(), ...publicErrors }, public: true },
  { method: 'post', path: '/api/v1/public/{share_token}/runs/query', summary: 'The shared runs in cursor pages, read without an API key', tag: 'runs', body: publicRunQuerySchema, responses: { 200: runQueryResponseSchema, ...publicErrors }, public: true },
];
