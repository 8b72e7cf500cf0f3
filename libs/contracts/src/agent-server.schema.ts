import { z } from 'zod';
import { queryBool, zonedDateTime } from './common.schema';

/**
 * The agent server ({deployment_url}): assistants, threads and runs as the published
 * `@langchain/langgraph-sdk` client sends and reads them (wire/clients.md section 3).
 */

export const AGENT_RUN_STATUSES = ['pending', 'running', 'error', 'success', 'timeout', 'interrupted'] as const;
export type AgentRunStatus = (typeof AGENT_RUN_STATUSES)[number];
export const AGENT_THREAD_STATUSES = ['idle', 'busy', 'interrupted', 'error'] as const;
export type AgentThreadStatus = (typeof AGENT_THREAD_STATUSES)[number];
export const MULTITASK_STRATEGIES = ['reject', 'interrupt', 'rollback', 'enqueue'] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];
export const AGENT_STREAM_MODES = ['values', 'messages', 'messages-tuple', 'updates', 'events', 'debug', 'tasks', 'checkpoints', 'custom'] as const;
export type AgentStreamMode = (typeof AGENT_STREAM_MODES)[number];
export const AGENT_DURABILITIES = ['sync', 'async', 'exit'] as const;

const uuid = z.string().uuid();
const jsonObject = z.record(z.string(), z.unknown());
const sortOrder = z.enum(['asc', 'desc']);
const limit = z.coerce.number().int().min(1).max(1000).default(10);
const offset = z.coerce.number().int().min(0).default(0);

export const agentGraphConfigSchema = z
  .object({
    tags: z.array(z.string()).optional(),
    recursion_limit: z.number().int().min(1).optional(),
    configurable: jsonObject.optional(),
  })
  .passthrough();
export type AgentGraphConfig = z.infer<typeof agentGraphConfigSchema>;

// --- assistants ----------------------------------------------------------------------------------

export const agentAssistantCreateSchema = z
  .object({
    graph_id: z.string().min(1),
    assistant_id: uuid.optional(),
    config: agentGraphConfigSchema.optional(),
    context: jsonObject.optional(),
    metadata: jsonObject.optional(),
    if_exists: z.enum(['raise', 'do_nothing']).default('raise'),
    name: z.string().min(1).max(500).optional(),
    description: z.string().max(5000).nullable().optional(),
  })
  .strict();
export type AgentAssistantCreate = z.infer<typeof agentAssistantCreateSchema>;

export const agentAssistantSearchSchema = z
  .object({
    graph_id: z.string().optional(),
    name: z.string().optional(),
    metadata: jsonObject.optional(),
    limit,
    offset,
    sort_by: z.enum(['assistant_id', 'graph_id', 'name', 'created_at', 'updated_at']).default('created_at'),
    sort_order: sortOrder.default('asc'),
    select: z.array(z.string()).optional(),
  })
  .strict();
export type AgentAssistantSearch = z.infer<typeof agentAssistantSearchSchema>;

/** POST /assistants/count: the search filters alone. */
export const agentAssistantCountSchema = z
  .object({ graph_id: z.string().optional(), name: z.string().optional(), metadata: jsonObject.optional() })
  .strict();
export type AgentAssistantCount = z.infer<typeof agentAssistantCountSchema>;

/** PATCH /assistants/{id}: every field optional; the change is stored as a new version. */
export const agentAssistantUpdateSchema = z
  .object({
    graph_id: z.string().min(1).optional(),
    config: agentGraphConfigSchema.optional(),
    context: jsonObject.optional(),
    metadata: jsonObject.optional(),
    name: z.string().min(1).max(500).optional(),
    description: z.string().max(5000).nullable().optional(),
  })
  .strict();
export type AgentAssistantUpdate = z.infer<typeof agentAssistantUpdateSchema>;

export const agentAssistantVersionsSchema = z.object({ metadata: jsonObject.optional(), limit, offset }).strict();
export type AgentAssistantVersions = z.infer<typeof agentAssistantVersionsSchema>;

export const agentAssistantSetLatestSchema = z.object({ version: z.number().int().min(1) }).strict();

export const agentAssistantGraphQuerySchema = z
  // Digits are a depth (xray=1 is one level), any other word a boolean.
  .object({ xray: z.union([z.string().regex(/^\d+$/).transform(Number), queryBool]).default(false) })
  .strict();

export const agentAssistantSubgraphsQuerySchema = z.object({ recurse: queryBool.default(false) }).strict();

export interface AgentAssistantVersion {
  assistant_id: string;
  graph_id: string;
  name: string;
  description: string | null;
  config: AgentGraphConfig;
  context: Record<string, unknown>;
  metadata: Record<string, unknown>;
  version: number;
  created_at: string;
}

export interface AgentGraphSchemas {
  graph_id: string;
  input_schema: unknown;
  output_schema: unknown;
  state_schema: unknown;
  config_schema: unknown;
  context_schema: unknown;
}

/** The current version of an assistant, with the time it was last changed. */
export interface AgentAssistant extends AgentAssistantVersion {
  updated_at: string;
}

/** DELETE /assistants/{id}: `delete_threads=true` also deletes the threads whose metadata names the assistant. */
export const agentAssistantDeleteQuerySchema = z
  .object({
    delete_threads: queryBool.default(false),
  })
  .strict();

// --- threads -------------------------------------------------------------------------------------

/**
 * A thread's time to live, in minutes (the SDK sends a number as `{ttl, strategy: "delete"}`): the
 * thread, its runs and checkpoints are deleted once that long has passed since it was created, or since
 * the update that last set a ttl. `delete` is the only strategy; null is no ttl (an update with null
 * keeps the one set).
 */
export const agentThreadTtlSchema = z
  .union([
    z.number().positive().finite(),
    z.object({ ttl: z.number().positive().finite(), strategy: z.literal('delete').default('delete') }).strict(),
  ])
  .transform((t) => (typeof t === 'number' ? t : t.ttl));

export const agentThreadCreateSchema = z
  .object({
    thread_id: uuid.optional(),
    metadata: jsonObject.optional(),
    if_exists: z.enum(['raise', 'do_nothing']).default('raise'),
    ttl: agentThreadTtlSchema.nullable().optional(),
    /**
     * State updates applied to the new thread before it is returned, one checkpoint per superstep (the
     * graph is `metadata.graph_id`): each update writes `values` as if node `as_node` (or `__input__`,
     * the graph's input) had returned them.
     */
    supersteps: z
      .array(
        z
          .object({
            updates: z
              .array(z.object({ values: z.unknown().optional(), command: z.unknown().optional(), as_node: z.string().min(1).optional() }).strict())
              .min(1),
          })
          .strict(),
      )
      .nullable()
      .optional(),
  })
  .strict();
export type AgentThreadCreate = z.infer<typeof agentThreadCreateSchema>;

export const agentThreadPatchSchema = z.object({ metadata: jsonObject.optional(), ttl: agentThreadTtlSchema.nullable().optional() }).strict();
export type AgentThreadPatch = z.infer<typeof agentThreadPatchSchema>;

export const agentThreadSearchSchema = z
  .object({
    metadata: jsonObject.optional(),
    ids: z.array(uuid).optional(),
    values: jsonObject.optional(),
    status: z.enum(AGENT_THREAD_STATUSES).optional(),
    limit,
    offset,
    sort_by: z.enum(['thread_id', 'status', 'created_at', 'updated_at']).default('created_at'),
    sort_order: sortOrder.default('desc'),
    select: z.array(z.string()).optional(),
  })
  .strict();
export type AgentThreadSearch = z.infer<typeof agentThreadSearchSchema>;

/** POST /threads/count: the search filters alone. */
export const agentThreadCountSchema = z
  .object({ metadata: jsonObject.optional(), ids: z.array(uuid).optional(), values: jsonObject.optional(), status: z.enum(AGENT_THREAD_STATUSES).optional() })
  .strict();
export type AgentThreadCount = z.infer<typeof agentThreadCountSchema>;

export const agentThreadHistorySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(10),
    before: z.union([z.string(), z.object({ configurable: jsonObject }).passthrough()]).optional(),
    metadata: jsonObject.optional(),
    checkpoint: jsonObject.optional(),
  })
  .strict();
export type AgentThreadHistory = z.infer<typeof agentThreadHistorySchema>;

const checkpointRefSchema = z
  .object({ checkpoint_id: z.string().min(1).optional(), checkpoint_ns: z.string().optional(), checkpoint_map: jsonObject.nullable().optional(), thread_id: z.string().optional() })
  .passthrough();

/** POST /threads/{id}/state (client.threads.updateState). */
export const agentThreadUpdateStateSchema = z
  .object({
    values: z.union([jsonObject, z.array(z.unknown()), z.null()]).optional(),
    as_node: z.string().min(1).optional(),
    checkpoint_id: z.string().min(1).optional(),
    checkpoint: checkpointRefSchema.optional(),
  })
  .strict();
export type AgentThreadUpdateState = z.infer<typeof agentThreadUpdateStateSchema>;

/**
 * PATCH /threads/{id}/state (client.threads.patchState): metadata merged into a checkpoint's metadata, the
 * thread's latest unless one is named (the published client sends only `metadata`).
 */
export const agentThreadPatchStateSchema = z
  .object({ metadata: jsonObject, checkpoint_id: z.string().min(1).optional(), checkpoint: checkpointRefSchema.optional() })
  .strict();
export type AgentThreadPatchState = z.infer<typeof agentThreadPatchStateSchema>;

/** POST /threads/{id}/state/checkpoint (client.threads.getState with a checkpoint object). */
export const agentThreadStateAtSchema = z.object({ checkpoint: checkpointRefSchema, subgraphs: z.boolean().optional() }).strict();

export interface AgentThread {
  thread_id: string;
  created_at: string;
  updated_at: string;
  state_updated_at: string;
  metadata: Record<string, unknown>;
  status: AgentThreadStatus;
  values: unknown;
  interrupts: Record<string, unknown>;
  config: Record<string, unknown>;
  error: unknown;
}

// --- runs ----------------------------------------------------------------------------------------

const streamModeSchema = z.union([z.enum(AGENT_STREAM_MODES), z.array(z.enum(AGENT_STREAM_MODES))]);

const agentRunCreateShape = {
  assistant_id: z.string().min(1),
  input: z.union([jsonObject, z.null()]).optional(),
  command: z
    .object({ resume: z.unknown().optional(), update: z.unknown().optional(), goto: z.unknown().optional() })
    .passthrough()
    .nullable()
    .optional(),
  config: agentGraphConfigSchema.optional(),
  context: jsonObject.optional(),
  metadata: jsonObject.optional(),
  stream_mode: streamModeSchema.optional(),
  stream_subgraphs: z.boolean().optional(),
  stream_resumable: z.boolean().optional(),
  interrupt_before: z.union([z.literal('*'), z.array(z.string())]).optional(),
  interrupt_after: z.union([z.literal('*'), z.array(z.string())]).optional(),
  /** Posted the run (its values, its error) when it ends: an absolute http(s) URL. */
  webhook: z
    .string()
    .refine((u) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol), { message: 'webhook must be an absolute http or https URL' })
    .optional(),
  multitask_strategy: z.enum(MULTITASK_STRATEGIES).optional(),
  after_seconds: z.number().min(0).max(86_400).optional(),
  if_not_exists: z.enum(['create', 'reject']).optional(),
  checkpoint_during: z.boolean().optional(),
  durability: z.enum(AGENT_DURABILITIES).optional(),
  on_completion: z.enum(['delete', 'keep', 'complete', 'continue']).optional(),
  on_disconnect: z.enum(['cancel', 'continue']).optional(),
  feedback_keys: z.array(z.string()).optional(),
  langsmith_tracer: z.object({ project_name: z.string().optional(), example_id: z.string().optional() }).passthrough().optional(),
  checkpoint: z.unknown().optional(),
  checkpoint_id: z.string().optional(),
};

export const agentRunCreateSchema = z.object(agentRunCreateShape).strict();

/** POST /runs/batch: stateless background runs, created together or not at all. */
export const agentRunBatchSchema = z.array(z.unknown()).min(1).max(100);
export type AgentRunCreate = z.infer<typeof agentRunCreateSchema>;

export const agentRunListQuerySchema = z
  .object({
    limit,
    offset,
    status: z.enum(AGENT_RUN_STATUSES).optional(),
    select: z.string().optional(),
  })
  .strict();

export const agentRunCancelQuerySchema = z
  .object({
    wait: queryBool.default(false),
    action: z.enum(['interrupt', 'rollback']).default('interrupt'),
  })
  .strict();

export const agentRunJoinStreamQuerySchema = z
  .object({
    cancel_on_disconnect: queryBool.default(false),
    stream_mode: z.string().optional(),
  })
  .strict();

/**
 * GET /threads/{id}/stream (client.threads.joinStream): only the runs' own events (`run_modes`, the
 * default) are streamed; the lifecycle and state_update modes are refused.
 */
export const agentThreadStreamQuerySchema = z
  .object({ stream_mode: z.union([z.literal('run_modes'), z.array(z.literal('run_modes'))]).optional() })
  .strict();

/** A thread stream's event id: the run and the event's sequence number in it (0 for the run's metadata). */
export const agentThreadEventIdSchema = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:\d{1,9}$/i, 'Expected "<run_id>:<seq>", an id of this thread stream')
  .transform((v) => {
    const [runId, seq] = v.split(':') as [string, string];
    return { run_id: runId.toLowerCase(), seq: Number(seq) };
  });

export interface AgentRun {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  created_at: string;
  updated_at: string;
  status: AgentRunStatus;
  metadata: Record<string, unknown>;
  kwargs: Record<string, unknown>;
  multitask_strategy: MultitaskStrategy;
}

export interface AgentThreadState {
  values: unknown;
  next: string[];
  tasks: unknown[];
  checkpoint: { thread_id: string; checkpoint_ns: string; checkpoint_id: string; checkpoint_map: unknown } | null;
  metadata: unknown;
  created_at: string | null;
  parent_checkpoint: unknown;
  interrupts: unknown[];
}

// --- crons ---------------------------------------------------------------------------------------

/** The run fields a cron keeps as its payload and gives every run it creates. */
const cronRunShape = {
  assistant_id: agentRunCreateShape.assistant_id,
  input: agentRunCreateShape.input,
  config: agentRunCreateShape.config,
  context: agentRunCreateShape.context,
  metadata: agentRunCreateShape.metadata,
  interrupt_before: agentRunCreateShape.interrupt_before,
  interrupt_after: agentRunCreateShape.interrupt_after,
  webhook: agentRunCreateShape.webhook,
  multitask_strategy: agentRunCreateShape.multitask_strategy,
  if_not_exists: agentRunCreateShape.if_not_exists,
  checkpoint_during: agentRunCreateShape.checkpoint_during,
  durability: agentRunCreateShape.durability,
};
const cronEndTime = zonedDateTime();
/** A 5-field cron expression (its fields are checked by the server's schedule parser). */
const cronSchedule = z.string().min(1).max(200);
/** What a stateless cron does with each run's new thread once the run has ended. */
const onRunCompleted = z.enum(['delete', 'keep']);

/**
 * POST /runs/crons and POST /threads/{id}/runs/crons (client.crons.create / createForThread): a 5-field
 * schedule in UTC (checked by the server), when to stop, and the run to create at each firing.
 */
export const agentCronCreateSchema = z
  .object({
    ...cronRunShape,
    schedule: cronSchedule,
    end_time: cronEndTime.nullable().optional(),
    on_run_completed: onRunCompleted.optional(),
    enabled: z.boolean().optional(),
  })
  .strict();
export type AgentCronCreate = z.infer<typeof agentCronCreateSchema>;

/** PATCH /runs/crons/{id} (client.crons.update): only the fields sent change; metadata is merged. */
export const agentCronUpdateSchema = z
  .object({
    schedule: cronSchedule.optional(),
    end_time: cronEndTime.nullable().optional(),
    input: cronRunShape.input,
    metadata: cronRunShape.metadata,
    config: cronRunShape.config,
    context: cronRunShape.context,
    webhook: cronRunShape.webhook,
    interrupt_before: cronRunShape.interrupt_before,
    interrupt_after: cronRunShape.interrupt_after,
    on_run_completed: onRunCompleted.optional(),
    enabled: z.boolean().optional(),
  })
  .strict();
export type AgentCronUpdate = z.infer<typeof agentCronUpdateSchema>;

export const AGENT_CRON_FIELDS = [
  'cron_id',
  'assistant_id',
  'thread_id',
  'on_run_completed',
  'end_time',
  'schedule',
  'created_at',
  'updated_at',
  'payload',
  'user_id',
  'next_run_date',
  'metadata',
  'enabled',
] as const;
export type AgentCronField = (typeof AGENT_CRON_FIELDS)[number];

/** POST /runs/crons/count: the search filters alone. */
export const agentCronCountSchema = z
  .object({ assistant_id: uuid.optional(), thread_id: uuid.optional(), enabled: z.boolean().optional() })
  .strict();
export type AgentCronCount = z.infer<typeof agentCronCountSchema>;

/** POST /runs/crons/search. `select` may also name "now", the server's time when it answered. */
export const agentCronSearchSchema = agentCronCountSchema
  .extend({
    limit,
    offset,
    sort_by: z.enum(['cron_id', 'assistant_id', 'thread_id', 'created_at', 'updated_at', 'next_run_date']).default('created_at'),
    sort_order: sortOrder.default('desc'),
    select: z.array(z.enum([...AGENT_CRON_FIELDS, 'now'])).min(1).optional(),
  })
  .strict();
export type AgentCronSearch = z.infer<typeof agentCronSearchSchema>;

/** A cron as the published client's Cron type reads it; user_id is always null (no per-user crons). */
export interface AgentCron {
  cron_id: string;
  assistant_id: string;
  thread_id: string | null;
  on_run_completed: 'delete' | 'keep' | null;
  end_time: string | null;
  schedule: string;
  created_at: string;
  updated_at: string;
  payload: Record<string, unknown>;
  user_id: string | null;
  next_run_date: string | null;
  metadata: Record<string, unknown>;
  enabled: boolean;
}

/** The graph configuration file (langgraph_config_path): graph names mapped to "./module.js:export". */
export const agentGraphsConfigFileSchema = z
  .object({
    graphs: z.record(z.string().min(1), z.string().regex(/^[^:]+(:[A-Za-z_$][\w$]*)?$/, 'expected "./path/to/module.js:exportName"')),
    env: z.union([z.record(z.string(), z.string()), z.string()]).optional(),
  })
  .passthrough();
export type AgentGraphsConfigFile = z.infer<typeof agentGraphsConfigFileSchema>;

// --- store ---------------------------------------------------------------------------------------

/**
 * A namespace label as LangGraph's BaseStore accepts it: non-empty and without '.', the character
 * GET /store/items joins labels with.
 */
const storeLabel = z
  .string()
  .min(1, 'Namespace labels cannot be empty')
  .refine((s) => !s.includes('.'), { message: "Namespace labels cannot contain periods ('.')" });
/** In list-namespaces match conditions, a '*' label matches any one label (as LangGraph's stores do). */
const storeNamespace = z.array(storeLabel);
/** The namespace of one item: at least one label. */
const storeItemNamespace = storeNamespace.min(1, 'Namespace cannot be empty');
const storeKey = z.string().min(1, 'Key cannot be empty');
/** Minutes (LangGraph's unit), fractions allowed; null or absent: the item never expires. */
const storeTtl = z.number().positive().nullable().optional();

/** PUT /store/items (client.store.putItem). `index` is accepted and ignored: there is no vector index. */
export const agentStorePutSchema = z
  .object({
    namespace: storeItemNamespace,
    key: storeKey,
    value: jsonObject,
    index: z.union([z.literal(false), z.array(z.string()), z.null()]).optional(),
    ttl: storeTtl,
  })
  .strict();
export type AgentStorePut = z.infer<typeof agentStorePutSchema>;

/** DELETE /store/items (client.store.deleteItem). */
export const agentStoreDeleteSchema = z.object({ namespace: storeItemNamespace, key: storeKey }).strict();
export type AgentStoreDelete = z.infer<typeof agentStoreDeleteSchema>;

/** GET /store/items?namespace=a.b&key=k[&refresh_ttl=true]: the client joins the labels with '.'. */
export const agentStoreGetQuerySchema = z
  .object({
    namespace: z.string().transform((s) => s.split('.')).pipe(storeNamespace),
    key: storeKey,
    refresh_ttl: queryBool.optional(),
  })
  .strict();
export type AgentStoreGetQuery = z.infer<typeof agentStoreGetQuerySchema>;

/** POST /store/items/search. `query` (semantic search) is accepted and ignored: there is no embedding index. */
export const agentStoreSearchSchema = z
  .object({
    namespace_prefix: storeNamespace,
    filter: jsonObject.nullable().optional(),
    limit,
    offset,
    query: z.string().nullable().optional(),
    refresh_ttl: z.boolean().nullable().optional(),
  })
  .strict();
export type AgentStoreSearch = z.infer<typeof agentStoreSearchSchema>;

/** POST /store/namespaces. */
export const agentStoreNamespacesSchema = z
  .object({
    prefix: storeNamespace.nullable().optional(),
    suffix: storeNamespace.nullable().optional(),
    max_depth: z.number().int().min(1).nullable().optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset,
  })
  .strict();
export type AgentStoreNamespaces = z.infer<typeof agentStoreNamespacesSchema>;

export interface AgentStoreItem {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

/** A search result; `score` is always null (no semantic search). */
export interface AgentStoreSearchItem extends AgentStoreItem {
  score: null;
}
