import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import {
  agentAssistantCreateSchema,
  agentAssistantGraphQuerySchema,
  agentAssistantCountSchema,
  agentAssistantSearchSchema,
  agentAssistantSetLatestSchema,
  agentAssistantSubgraphsQuerySchema,
  agentAssistantUpdateSchema,
  agentAssistantVersionsSchema,
  agentRunBatchSchema,
  agentThreadEventIdSchema,
  agentThreadPatchStateSchema,
  agentThreadStateAtSchema,
  agentThreadStreamQuerySchema,
  agentThreadUpdateStateSchema,
  type AgentAssistantVersion,
  type AgentGraphSchemas,
  agentRunCreateSchema,
  agentAssistantDeleteQuerySchema,
  agentThreadCreateSchema,
  agentThreadHistorySchema,
  agentThreadPatchSchema,
  agentThreadCountSchema,
  agentThreadSearchSchema,
  type AgentAssistant,
  type AgentRun,
  type AgentRunStatus,
  type AgentThread,
  type AgentThreadCreate,
  type AgentThreadState,
  type ValidationErrorItem,
} from '@th/contracts';
import { OutboundPolicy, OutboundRefused, ValidationFailed, conflict, notFound, parseOrThrow, toValidationErrors } from '@th/platform';
import type { z } from 'zod';
import {
  CHANNELS,
  toRun,
  toThread,
  type AgentRepository,
  type CreateRunOptions,
  type DirectClaim,
  type NewRun,
  type RunRow,
  type ThreadRun,
  type ThreadRunPosition,
} from './agent.repository';
import type { CompiledGraphLike, LoadedGraph, StateSnapshotLike } from './graph-registry';
import type { Notifier } from './notifier';
import { toWire } from './serialize';
import type { RunEndListener } from './webhook';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TERMINAL: ReadonlySet<AgentRunStatus> = new Set(['success', 'error', 'timeout', 'interrupted']);
export const isTerminal = (s: AgentRunStatus): boolean => TERMINAL.has(s);

/** A path id: a malformed one is a 422 on its location, like any other bad input. */
/** A state update the graph refused (bad values, a node that cannot write them) as a 422 at `loc`; anything else as it is. */
function asInvalidUpdate(err: unknown, loc: string[]): unknown {
  const e = err as Error;
  if (e?.name === 'InvalidUpdateError' || e?.name === 'ZodError' || e?.name === 'EmptyChannelError') {
    return new ValidationFailed([{ loc, msg: e.message, type: 'invalid_update' }]);
  }
  return err;
}

export function pathId(value: string, name: string): string {
  if (!UUID.test(value)) throw new ValidationFailed([{ loc: ['path', name], msg: 'Input should be a valid UUID', type: 'uuid_parsing' }]);
  return value.toLowerCase();
}

export interface StreamEvent {
  seq: number;
  event: string;
  data: string;
}

/** An event of a thread stream: its id names the run and the event's sequence number in it. */
export interface ThreadStreamEvent {
  id: string;
  event: string;
  data: string;
}

/** Where a thread stream resumes: after this event of this run (seq 0 is the run's metadata). */
export interface ThreadStreamCursor {
  run_id: string;
  seq: number;
}

interface ZodLike {
  safeParse(v: unknown): { success: boolean; error?: z.ZodError };
  partial?: () => ZodLike;
}

/** This process's run executor (the RunWorker), which may take a run it creates at once. */
export interface RunExecutor {
  reserve(): DirectClaim | null;
  unreserve(): void;
  adopt(run: RunRow): void;
  running(runId: string): { threadId: string; ended: RunRow | null } | null;
}

/** Assistants, threads and runs: the agent server's use cases, called by thin controllers. */
export class AgentService {
  private readonly logger = new Logger('agent-server');

  constructor(
    private readonly repo: AgentRepository,
    private readonly notifier: Notifier,
    private readonly graphs: Map<string, LoadedGraph>,
    private readonly executor: RunExecutor | null = null,
    /** Told of the runs this service ends itself (pending runs interrupted), once committed. */
    private readonly ended: RunEndListener | null = null,
    /** Where run webhooks may point (public addresses, or what the operator's allow-list names). */
    private readonly outbound: OutboundPolicy,
  ) {}

  // --- assistants ----------------------------------------------------------------------------

  /** Default assistants (one per graph) never change: kept in memory once read. */
  private readonly defaults = new Map<string, AgentAssistant>();

  async resolveAssistant(idOrGraph: string): Promise<AgentAssistant> {
    const byGraph = this.graphs.get(idOrGraph);
    const id = byGraph ? byGraph.assistantId : UUID.test(idOrGraph) ? idOrGraph.toLowerCase() : null;
    if (id && this.defaults.has(id)) return this.defaults.get(id)!;
    const a = id ? await this.repo.getAssistant(id) : null;
    if (!a) throw notFound(`Assistant ${idOrGraph}`);
    if ([...this.graphs.values()].some((g) => g.assistantId === a.assistant_id)) this.defaults.set(a.assistant_id, a);
    return a;
  }

  async createAssistant(body: unknown): Promise<AgentAssistant> {
    const a = parseOrThrow(agentAssistantCreateSchema, body ?? {}, ['body']);
    if (!this.graphs.has(a.graph_id)) throw notFound(`Graph ${a.graph_id}`);
    const id = a.assistant_id?.toLowerCase() ?? randomUUID();
    const created = await this.repo.createAssistant(id, a);
    if (created) return created;
    if (a.if_exists === 'do_nothing') return (await this.repo.getAssistant(id))!;
    throw conflict(`Assistant ${id} already exists`);
  }

  async searchAssistants(body: unknown): Promise<{ items: AgentAssistant[]; next: number | null; total: number }> {
    const q = parseOrThrow(agentAssistantSearchSchema, body ?? {}, ['body']);
    const { items, total } = await this.repo.searchAssistants(q);
    return { items, total, next: q.offset + items.length < total ? q.offset + items.length : null };
  }

  /** POST /assistants/count: how many assistants the same filters as search match. */
  countAssistants(body: unknown): Promise<number> {
    return this.repo.countAssistants(parseOrThrow(agentAssistantCountSchema, body ?? {}, ['body']));
  }

  /** The default assistant of a graph (created by the server, one per graph) is fixed: it is cached and shared by every process. */
  private isDefault(assistantId: string): boolean {
    return [...this.graphs.values()].some((g) => g.assistantId === assistantId);
  }

  /** PATCH /assistants/{id}: the change becomes a new version, made current. */
  async updateAssistant(id: string, body: unknown): Promise<AgentAssistant> {
    const u = parseOrThrow(agentAssistantUpdateSchema, body ?? {}, ['body']);
    const aid = pathId(id, 'assistant_id');
    if (this.isDefault(aid)) throw conflict(`Assistant ${aid} is the default assistant of its graph and cannot be changed; create an assistant instead`);
    if (u.graph_id !== undefined && !this.graphs.has(u.graph_id)) throw notFound(`Graph ${u.graph_id}`);
    const a = await this.repo.updateAssistant(aid, u);
    if (!a) throw notFound(`Assistant ${id}`);
    return a;
  }

  async assistantVersions(id: string, body: unknown): Promise<AgentAssistantVersion[]> {
    const q = parseOrThrow(agentAssistantVersionsSchema, body ?? {}, ['body']);
    const assistant = await this.resolveAssistant(id);
    const versions = await this.repo.listAssistantVersions(assistant.assistant_id, q);
    if (!versions) throw notFound(`Assistant ${id}`);
    return versions;
  }

  async setLatestVersion(id: string, body: unknown): Promise<AgentAssistant> {
    const { version } = parseOrThrow(agentAssistantSetLatestSchema, body ?? {}, ['body']);
    const aid = pathId(id, 'assistant_id');
    if (this.isDefault(aid)) throw conflict(`Assistant ${aid} is the default assistant of its graph and cannot be changed`);
    const r = await this.repo.setLatestAssistantVersion(aid, version);
    if (r === 'no_assistant') throw notFound(`Assistant ${id}`);
    if (r === 'no_version') throw notFound(`Version ${version} of assistant ${id}`);
    return r;
  }

  private async assistantGraph(id: string): Promise<{ assistant: AgentAssistant; graph: CompiledGraphLike }> {
    const assistant = await this.resolveAssistant(id);
    const loaded = this.graphs.get(assistant.graph_id);
    if (!loaded) throw notFound(`Graph ${assistant.graph_id}`);
    return { assistant, graph: loaded.graph };
  }

  /** GET /assistants/{id}/graph: the drawable graph ({nodes, edges}); xray includes subgraphs (true, or up to a depth). */
  async assistantGraphJson(id: string, query: unknown): Promise<unknown> {
    const q = parseOrThrow(agentAssistantGraphQuerySchema, query ?? {}, ['query']);
    const { assistant, graph } = await this.assistantGraph(id);
    const drawable = await graph.getGraphAsync({ ...assistant.config, xray: q.xray });
    return toWire(drawable.toJSON());
  }

  /** GET /assistants/{id}/schemas: JSON Schemas from the graph's zod state definitions; null where the graph has none (e.g. Annotation state). */
  async assistantSchemas(id: string): Promise<AgentGraphSchemas> {
    const { assistant, graph } = await this.assistantGraph(id);
    return { graph_id: assistant.graph_id, ...schemasOf(graph) };
  }

  /** GET /assistants/{id}/subgraphs[/{namespace}]: the schemas of the graph's subgraphs, keyed by namespace. */
  async assistantSubgraphs(id: string, namespace: string | undefined, query: unknown): Promise<Record<string, Omit<AgentGraphSchemas, 'graph_id'>>> {
    const q = parseOrThrow(agentAssistantSubgraphsQuerySchema, query ?? {}, ['query']);
    const { graph } = await this.assistantGraph(id);
    const out: Record<string, Omit<AgentGraphSchemas, 'graph_id'>> = {};
    if (typeof graph.getSubgraphsAsync !== 'function') return out;
    for await (const [ns, sub] of graph.getSubgraphsAsync(namespace, q.recurse)) out[ns] = schemasOf(sub);
    return out;
  }

  /**
   * Deletes an assistant; with `delete_threads=true` also every thread whose `metadata.assistant_id` is
   * it (as DELETE /threads/{id} would: runs, checkpoints, running runs cancelled), after the assistant.
   */
  async deleteAssistant(id: string, query: unknown = {}): Promise<void> {
    const assistantId = pathId(id, 'assistant_id');
    const q = parseOrThrow(agentAssistantDeleteQuerySchema, query ?? {}, ['query']);
    if (!(await this.repo.deleteAssistant(assistantId))) throw notFound(`Assistant ${id}`);
    if (q.delete_threads) for (const threadId of await this.repo.threadsOfAssistant(assistantId)) await this.repo.deleteThread(threadId);
  }

  // --- threads -------------------------------------------------------------------------------

  async createThread(body: unknown): Promise<AgentThread> {
    const t = parseOrThrow(agentThreadCreateSchema, body ?? {}, ['body']);
    const id = t.thread_id?.toLowerCase() ?? randomUUID();
    const supersteps = t.supersteps?.length ? this.checkSupersteps(t.supersteps, t.metadata?.graph_id) : null;
    const created = await this.repo.createThread(id, t.metadata ?? {}, false, t.ttl ?? null);
    if (created) return supersteps ? this.applySupersteps(id, supersteps) : created;
    if (t.if_exists === 'do_nothing') return this.getThread(id);
    throw conflict(`Thread ${id} already exists`);
  }

  /** A create's supersteps checked against their graph (metadata.graph_id) before anything is written. */
  private checkSupersteps(
    supersteps: NonNullable<AgentThreadCreate['supersteps']>,
    graphId: unknown,
  ): { graphId: string; graph: CompiledGraphLike; steps: { updates: { values?: unknown; asNode?: string }[] }[] } {
    const loaded = typeof graphId === 'string' ? this.graphs.get(graphId) : undefined;
    if (!loaded) {
      const msg = typeof graphId === 'string' ? `Unknown graph "${graphId}"` : 'supersteps need metadata.graph_id: the graph whose state they update';
      throw new ValidationFailed([{ loc: ['body', 'metadata', 'graph_id'], msg, type: 'value_error' }]);
    }
    const nodes = loaded.graph.nodes ? Object.keys(loaded.graph.nodes) : null;
    const problems: { loc: (string | number)[]; msg: string; type: string }[] = [];
    supersteps.forEach((step, i) =>
      step.updates.forEach((u, j) => {
        if (u.command !== undefined && u.command !== null) problems.push({ loc: ['body', 'supersteps', i, 'updates', j, 'command'], msg: 'commands in supersteps are not supported; give values', type: 'value_error' });
        if (u.as_node !== undefined && u.as_node !== '__input__' && nodes && !nodes.includes(u.as_node)) {
          problems.push({ loc: ['body', 'supersteps', i, 'updates', j, 'as_node'], msg: `"${u.as_node}" is not a node of graph ${String(graphId)} (${nodes.join(', ')})`, type: 'value_error' });
        }
      }),
    );
    if (problems.length > 0) throw new ValidationFailed(problems);
    return {
      graphId: graphId as string,
      graph: loaded.graph,
      steps: supersteps.map((s) => ({ updates: s.updates.map((u) => ({ values: u.values ?? null, ...(u.as_node !== undefined ? { asNode: u.as_node } : {}) })) })),
    };
  }

  /**
   * Applies a new thread's supersteps (one checkpoint each) and mirrors the resulting state on the
   * thread row. If the graph refuses them, the thread is deleted again: the create writes nothing.
   */
  private async applySupersteps(id: string, s: ReturnType<AgentService['checkSupersteps']>): Promise<AgentThread> {
    const graph = s.graph as CompiledGraphLike & { bulkUpdateState(config: unknown, steps: unknown): Promise<unknown> };
    try {
      await this.repo.setThreadGraph(id, s.graphId);
      await graph.bulkUpdateState({ configurable: { thread_id: id, checkpoint_ns: '' } }, s.steps);
      await this.mirrorState(id, graph);
    } catch (err) {
      await this.repo.deleteThread(id);
      throw asInvalidUpdate(err, ['body', 'supersteps']);
    }
    return this.getThread(id);
  }

  /** The thread row mirrors the graph's current state after a state update (committed checkpoints). */
  private async mirrorState(threadId: string, graph: CompiledGraphLike): Promise<void> {
    const state = await graph.getState({ configurable: { thread_id: threadId } });
    const interrupted = (state.tasks ?? []).some((x) => (x.interrupts ?? []).length > 0);
    await this.repo.setThreadState(threadId, toWire(state.values) ?? {}, interrupted ? 'interrupted' : 'idle');
  }

  async getThread(id: string): Promise<AgentThread> {
    const t = await this.repo.getThreadRow(pathId(id, 'thread_id'));
    if (!t || t.stateless) throw notFound(`Thread ${id}`);
    return toThread(t);
  }

  async patchThread(id: string, body: unknown): Promise<AgentThread> {
    const p = parseOrThrow(agentThreadPatchSchema, body ?? {}, ['body']);
    const t = await this.repo.patchThread(pathId(id, 'thread_id'), p.metadata ?? {}, p.ttl ?? null);
    if (!t) throw notFound(`Thread ${id}`);
    return t;
  }

  /** POST /threads/count: how many threads the same filters as search match. */
  countThreads(body: unknown): Promise<number> {
    return this.repo.countThreads(parseOrThrow(agentThreadCountSchema, body ?? {}, ['body']));
  }

  searchThreads(body: unknown): Promise<AgentThread[]> {
    return this.repo.searchThreads(parseOrThrow(agentThreadSearchSchema, body ?? {}, ['body']));
  }

  /** POST /threads/{id}/copy: the thread and its checkpoint history under a new id (runs are not copied). */
  async copyThread(id: string): Promise<AgentThread> {
    const t = await this.repo.copyThread(pathId(id, 'thread_id'), randomUUID());
    if (!t) throw notFound(`Thread ${id}`);
    return t;
  }

  async deleteThread(id: string): Promise<void> {
    if ((await this.repo.deleteThread(pathId(id, 'thread_id'))) === null) throw notFound(`Thread ${id}`);
  }

  /**
   * Deletes threads whose ttl ran out (as DELETE /threads/{id} does: runs, checkpoints, and running runs
   * cancelled), at most `limit` per call; returns how many. Several processes may sweep at once: a
   * thread another one deleted first is skipped.
   */
  async sweepExpiredThreads(limit = 100): Promise<number> {
    let n = 0;
    for (const id of await this.repo.expiredThreads(limit)) if ((await this.repo.deleteThread(id)) !== null) n++;
    return n;
  }

  private async threadGraph(id: string): Promise<CompiledGraphLike | null> {
    const t = await this.repo.getThreadRow(pathId(id, 'thread_id'));
    if (!t) throw notFound(`Thread ${id}`);
    return t.graph_id ? (this.graphs.get(t.graph_id)?.graph ?? null) : null;
  }

  async getState(id: string, subgraphs = false): Promise<AgentThreadState> {
    const graph = await this.threadGraph(id);
    if (!graph) return emptyState();
    return toState(await graph.getState({ configurable: { thread_id: id.toLowerCase() } }, { subgraphs }));
  }

  /** GET /threads/{id}/state/{checkpoint_id} and POST /threads/{id}/state/checkpoint: the state at one checkpoint (404 when it does not exist). */
  async getStateAt(id: string, checkpoint: { checkpoint_id?: string; checkpoint_ns?: string }, subgraphs = false): Promise<AgentThreadState> {
    const graph = await this.threadGraph(id);
    const tid = id.toLowerCase();
    const config = { configurable: { thread_id: tid, checkpoint_ns: checkpoint.checkpoint_ns ?? '', ...(checkpoint.checkpoint_id ? { checkpoint_id: checkpoint.checkpoint_id } : {}) } };
    if (!graph) throw notFound(`Checkpoint ${checkpoint.checkpoint_id ?? ''} of thread ${id}`);
    const saver = graph.checkpointer as { getTuple?: (c: unknown) => Promise<unknown> } | undefined;
    if (checkpoint.checkpoint_id && saver?.getTuple && !(await saver.getTuple(config))) throw notFound(`Checkpoint ${checkpoint.checkpoint_id} of thread ${id}`);
    return toState(await graph.getState(config, { subgraphs }));
  }

  async getStateAtCheckpoint(id: string, body: unknown): Promise<AgentThreadState> {
    const b = parseOrThrow(agentThreadStateAtSchema, body ?? {}, ['body']);
    return this.getStateAt(id, b.checkpoint, b.subgraphs ?? false);
  }

  /**
   * POST /threads/{id}/state: writes `values` as if node `as_node` had returned them, as a new checkpoint
   * (after `checkpoint_id` when given). Refused while a run is pending or running on the thread (409).
   */
  async updateState(id: string, body: unknown): Promise<{ checkpoint: AgentThreadState['checkpoint']; configurable: Record<string, unknown> }> {
    const b = parseOrThrow(agentThreadUpdateStateSchema, body ?? {}, ['body']);
    const tid = pathId(id, 'thread_id');
    const t = await this.repo.getThreadRow(tid);
    if (!t || t.stateless) throw notFound(`Thread ${id}`);
    if (!t.graph_id) throw conflict(`Thread ${id} has no graph yet: run it once before updating its state`);
    const loaded = this.graphs.get(t.graph_id);
    if (!loaded) throw notFound(`Graph ${t.graph_id}`);
    const graph = loaded.graph;
    if (b.as_node !== undefined && graph.nodes && !(b.as_node in graph.nodes)) {
      throw new ValidationFailed([{ loc: ['body', 'as_node'], msg: `"${b.as_node}" is not a node of graph ${t.graph_id} (${Object.keys(graph.nodes).join(', ')})`, type: 'value_error' }]);
    }
    if (t.active_run_id || t.status === 'busy') throw conflict(`Thread ${id} is busy with a run; update its state once the run has ended`);
    const checkpointId = b.checkpoint_id ?? b.checkpoint?.checkpoint_id;
    const config = { configurable: { thread_id: tid, checkpoint_ns: b.checkpoint?.checkpoint_ns ?? '', ...(checkpointId ? { checkpoint_id: checkpointId } : {}) } };
    const saver = graph.checkpointer as { getTuple?: (c: unknown) => Promise<unknown> } | undefined;
    if (checkpointId && saver?.getTuple && !(await saver.getTuple(config))) throw notFound(`Checkpoint ${checkpointId} of thread ${id}`);
    let next: { configurable?: Record<string, unknown> };
    try {
      next = await graph.updateState(config, b.values ?? null, b.as_node);
    } catch (err) {
      throw asInvalidUpdate(err, ['body', 'values']);
    }
    await this.mirrorState(tid, graph);
    // The reference server answers {checkpoint}; the published client's type reads {configurable}: both are given.
    const checkpoint = checkpointOf(next);
    return { checkpoint, configurable: checkpoint ? { thread_id: checkpoint.thread_id, checkpoint_ns: checkpoint.checkpoint_ns, checkpoint_id: checkpoint.checkpoint_id } : {} };
  }

  /**
   * PATCH /threads/{id}/state: merges metadata into the metadata of the thread's latest checkpoint (or of
   * the one named in the body); the values and the checkpoint history are untouched.
   */
  async patchState(id: string, body: unknown): Promise<void> {
    const b = parseOrThrow(agentThreadPatchStateSchema, body ?? {}, ['body']);
    const tid = pathId(id, 'thread_id');
    const t = await this.repo.getThreadRow(tid);
    if (!t || t.stateless) throw notFound(`Thread ${id}`);
    const checkpointId = b.checkpoint_id ?? b.checkpoint?.checkpoint_id ?? null;
    if (await this.repo.patchCheckpointMetadata(tid, b.checkpoint?.checkpoint_ns ?? '', checkpointId, b.metadata)) return;
    if (checkpointId) throw notFound(`Checkpoint ${checkpointId} of thread ${id}`);
    throw conflict(`Thread ${id} has no checkpoint yet: run it once before patching its state's metadata`);
  }

  async getHistory(id: string, body: unknown): Promise<AgentThreadState[]> {
    const h = parseOrThrow(agentThreadHistorySchema, body ?? {}, ['body']);
    const graph = await this.threadGraph(id);
    if (!graph) return [];
    const before = typeof h.before === 'string' ? { configurable: { thread_id: id.toLowerCase(), checkpoint_id: h.before } } : h.before;
    const out: AgentThreadState[] = [];
    for await (const s of graph.getStateHistory({ configurable: { thread_id: id.toLowerCase(), ...(h.checkpoint ?? {}) } }, { limit: h.limit, before, filter: h.metadata })) {
      out.push(toState(s));
      if (out.length >= h.limit) break;
    }
    return out;
  }

  // --- runs ----------------------------------------------------------------------------------

  /**
   * Creates a run on a thread (or, threadId null, on a fresh stateless thread). Validation, the
   * assistant and the input schema are checked before anything is written.
   */
  async createRun(threadId: string | null, body: unknown, opts: { stream: boolean } = { stream: false }): Promise<{ run: RunRow; body: z.infer<typeof agentRunCreateSchema> }> {
    const tid = threadId === null ? null : pathId(threadId, 'thread_id');
    const b = parseOrThrow(agentRunCreateSchema, body ?? {}, ['body']);
    const prepared = await this.prepareRun(tid, b, opts, ['body']);
    // A slot of this process's worker, so that the run can be taken in the statement that records it
    // (no NOTIFY and claim round trip) when its thread is idle.
    const direct = this.executor?.reserve() ?? null;
    let outcome: Awaited<ReturnType<AgentRepository['createRun']>>;
    try {
      outcome = await this.repo.createRun(prepared.run, prepared.opts, direct);
    } finally {
      if (direct) this.executor?.unreserve();
    }
    if (direct && outcome.kind === 'created' && outcome.run.status === 'running' && outcome.run.lease_owner === direct.owner) this.executor?.adopt(outcome.run);
    if (outcome.kind === 'thread_missing') throw notFound(`Thread ${threadId}`);
    if (outcome.kind === 'busy') throw conflict('Thread is busy with another run; multitask_strategy "reject" refused this one');
    for (const r of outcome.ended) this.ended?.runEnded(r);
    return { run: outcome.run, body: b };
  }

  /**
   * Checks a run body as createRun does (422 at `loc`, 404 for the assistant or its graph, the graph's input
   * schema) without writing anything: a cron's payload, checked when the cron is created or changed.
   */
  async checkRunBody(body: unknown, loc: (string | number)[]): Promise<{ body: z.infer<typeof agentRunCreateSchema>; assistant: AgentAssistant }> {
    const b = parseOrThrow(agentRunCreateSchema, body ?? {}, loc);
    await this.prepareRun(null, b, { stream: false }, loc);
    return { body: b, assistant: await this.resolveAssistant(b.assistant_id) };
  }

  /**
   * POST /runs/batch: stateless background runs, all validated (422 at ["body", i, ...]) and their
   * assistants resolved (404) before any is written, then created in one transaction.
   */
  async createBatch(body: unknown): Promise<AgentRun[]> {
    const items = parseOrThrow(agentRunBatchSchema, body, ['body']);
    const parsed = items.map((item, i) => parseOrThrow(agentRunCreateSchema, snakeKeys(item), ['body', i]));
    const prepared: { run: NewRun; opts: CreateRunOptions }[] = [];
    for (const [i, b] of parsed.entries()) prepared.push(await this.prepareRun(null, b, { stream: false }, ['body', i]));
    const outcomes = await this.repo.createRuns(prepared);
    return outcomes.map((o) => {
      if (o.kind !== 'created') throw new Error(`a stateless run could not be created (${o.kind})`);
      return toRun(o.run);
    });
  }

  private async prepareRun(
    tid: string | null,
    b: z.infer<typeof agentRunCreateSchema>,
    opts: { stream: boolean },
    loc: (string | number)[],
  ): Promise<{ run: NewRun; opts: CreateRunOptions }> {
    if (b.webhook) await this.checkWebhook(b.webhook, [...loc, 'webhook']);
    const assistant = await this.resolveAssistant(b.assistant_id);
    const loaded = this.graphs.get(assistant.graph_id);
    if (!loaded) throw notFound(`Graph ${assistant.graph_id}`);
    if (b.input) this.checkInput(loaded.graph, b.input, loc);
    const streamMode = b.stream_mode === undefined ? ['values'] : Array.isArray(b.stream_mode) ? b.stream_mode : [b.stream_mode];
    // Events are kept for replay only when someone asked to stream; a plain run's stream is its final values.
    const recordEvents = opts.stream || b.stream_mode !== undefined || b.stream_resumable === true;
    const kwargs = {
      input: b.input ?? null,
      command: b.command ?? null,
      config: {
        ...assistant.config,
        ...b.config,
        configurable: { ...(assistant.config.configurable ?? {}), ...(b.config?.configurable ?? {}) },
      },
      context: { ...assistant.context, ...(b.context ?? {}) },
      stream_mode: streamMode,
      record_events: recordEvents,
      stream_subgraphs: b.stream_subgraphs ?? false,
      stream_resumable: b.stream_resumable ?? false,
      interrupt_before: b.interrupt_before,
      interrupt_after: b.interrupt_after,
      durability: b.durability,
      webhook: b.webhook,
      temporary: tid === null,
    };
    return {
      run: {
        run_id: randomUUID(),
        thread_id: tid ?? randomUUID(),
        assistant_id: assistant.assistant_id,
        graph_id: assistant.graph_id,
        metadata: b.metadata ?? {},
        kwargs,
        multitask_strategy: b.multitask_strategy ?? 'enqueue',
        after_seconds: b.after_seconds ?? 0,
      },
      opts: { createThread: tid === null || b.if_not_exists === 'create', stateless: tid === null, threadMetadata: {} },
    };
  }

  /** A webhook must point where this server may call (422 otherwise); delivery checks the address it connects to again. */
  private async checkWebhook(url: string, loc: (string | number)[]): Promise<void> {
    try {
      await this.outbound.check(url);
    } catch (err) {
      if (err instanceof OutboundRefused) throw new ValidationFailed([{ loc, msg: `webhook ${err.message}`, type: 'value_error' }]);
      throw err;
    }
  }

  /** Refuses input the graph's input schema would refuse (422, nothing written). */
  private checkInput(graph: CompiledGraphLike, input: Record<string, unknown>, loc: (string | number)[]): void {
    const builder = graph.builder;
    const runtime = builder?._inputRuntimeDefinition as ZodLike | symbol | undefined;
    const schemaRt = (builder as { _schemaRuntimeDefinition?: ZodLike } | undefined)?._schemaRuntimeDefinition;
    const zod = runtime && typeof runtime === 'object' && typeof runtime.safeParse === 'function' ? runtime : typeof schemaRt?.partial === 'function' ? schemaRt.partial() : null;
    if (zod) {
      const r = zod.safeParse(input);
      if (!r.success && r.error) throw new ValidationFailed(toValidationErrors(r.error, [...loc, 'input']));
    }
    const def = builder?._inputDefinition;
    if (def && typeof def === 'object' && !('safeParse' in def)) {
      const known = new Set(Object.keys(def));
      const extra: ValidationErrorItem[] = Object.keys(input)
        .filter((k) => !known.has(k))
        .map((k) => ({ loc: [...loc, 'input', k], msg: `"${k}" is not a field of the graph's input (${[...known].join(', ')})`, type: 'extra_forbidden' }));
      if (extra.length) throw new ValidationFailed(extra);
    }
  }

  async getRun(threadId: string, runId: string): Promise<AgentRun> {
    const r = await this.repo.getRun(pathId(threadId, 'thread_id'), pathId(runId, 'run_id'));
    if (!r) throw notFound(`Run ${runId}`);
    return toRun(r);
  }

  async listRuns(threadId: string, limit: number, offset: number, status?: AgentRunStatus): Promise<AgentRun[]> {
    const tid = pathId(threadId, 'thread_id');
    const t = await this.repo.getThreadRow(tid);
    if (!t) throw notFound(`Thread ${threadId}`);
    return (await this.repo.listRuns(tid, limit, offset, status)).map(toRun);
  }

  async cancelRun(threadId: string, runId: string, action: 'interrupt' | 'rollback', wait: boolean): Promise<void> {
    const tid = pathId(threadId, 'thread_id');
    const rid = pathId(runId, 'run_id');
    const r = await this.cancelAndReport(tid, rid, action);
    if (r === 'absent') throw notFound(`Run ${runId}`);
    if (wait && r === 'signalled') await this.waitForEnd(tid, rid);
  }

  /** Cancels a run; a pending run it interrupts has ended here, and is reported (a running one is ended by its worker). */
  private async cancelAndReport(threadId: string, runId: string, action: 'interrupt' | 'rollback'): ReturnType<AgentRepository['cancelRun']> {
    const r = await this.repo.cancelRun(threadId, runId, action);
    const ended = this.ended;
    if (r === 'done' && action === 'interrupt' && ended) {
      // read after the cancel is committed, and in the background: reporting never fails the cancel
      void this.repo.getRun(threadId, runId).then(
        (run) => run && isTerminal(run.status) && ended.runEnded(run),
        (err: Error) => this.logger.warn({ msg: 'cancelled run not reported', run_id: runId, error: err.message }),
      );
    }
    return r;
  }

  async deleteRun(threadId: string, runId: string): Promise<void> {
    const r = await this.repo.deleteRun(pathId(threadId, 'thread_id'), pathId(runId, 'run_id'));
    if (r === 'absent') throw notFound(`Run ${runId}`);
    if (r === 'active') throw conflict(`Run ${runId} is still pending or running; cancel it first`);
  }

  /**
   * Resolves when the run has ended (by its NOTIFY, or at once when this process ended it; never a
   * timer); null when it no longer exists.
   */
  async waitForEnd(threadId: string | null, runId: string, signal?: AbortSignal): Promise<RunRow | null> {
    for (let first = true; ; first = false) {
      const sub = this.notifier.next(CHANNELS.done, runId, signal);
      // A run executing in this process needs no read: its end comes with its committed row.
      const local = first ? this.executor?.running(runId) : null;
      if (local && (threadId === null || local.threadId === threadId) && !signal?.aborted) {
        if (local.ended) {
          sub.cancel();
          return local.ended;
        }
        const ended = (await sub.promise) as RunRow | undefined;
        if (ended && isTerminal(ended.status)) return ended;
        continue;
      }
      const run = await this.repo.getRun(threadId, runId);
      if (!run || isTerminal(run.status) || signal?.aborted) {
        sub.cancel();
        return run;
      }
      const ended = (await sub.promise) as RunRow | undefined;
      // the committed row of a run this process ended (same run: the thread is checked too when given)
      if (ended && isTerminal(ended.status) && (threadId === null || ended.thread_id === threadId)) return ended;
    }
  }

  /** The body join and wait answer with: the final values, or {__error__} for a failed run. */
  static finalBody(run: RunRow | null): unknown {
    if (!run) return { __error__: { error: 'RunDeleted', message: 'The run was deleted (rolled back) before it ended' } };
    if (run.status === 'error' || run.status === 'timeout') return { __error__: run.error ?? { error: 'Error', message: `run ended as ${run.status}` } };
    return run.result ?? {};
  }

  /** The single event that stands for the stream of a run that kept no events: its final values, or its error. */
  static endEvent(run: RunRow): { event: string; data: string } {
    const body = AgentService.finalBody(run) as { __error__?: unknown };
    return body.__error__ ? { event: 'error', data: JSON.stringify(body.__error__) } : { event: 'values', data: JSON.stringify(body) };
  }

  async join(threadId: string, runId: string): Promise<unknown> {
    const tid = pathId(threadId, 'thread_id');
    const rid = pathId(runId, 'run_id');
    // absent at first or deleted while waiting: 404 either way
    const run = await this.waitForEnd(tid, rid);
    if (!run) throw notFound(`Run ${runId}`);
    return AgentService.finalBody(run);
  }

  async requireRun(threadId: string | null, runId: string): Promise<RunRow> {
    const r = await this.repo.getRun(threadId === null ? null : pathId(threadId, 'thread_id'), pathId(runId, 'run_id'));
    if (!r) throw notFound(`Run ${runId}`);
    return r;
  }

  /** A run's stream events after `afterSeq`, live until the run ends: replayable from the database by any process. */
  async *events(threadId: string | null, runId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<StreamEvent> {
    let last = afterSeq;
    for (;;) {
      const ev = this.notifier.next(CHANNELS.events, runId, signal);
      const done = this.notifier.next(CHANNELS.done, runId, signal);
      try {
        const run = await this.repo.getRun(threadId, runId);
        const rows = await this.repo.readEvents(runId, last);
        for (const r of rows) {
          last = r.seq;
          yield r;
        }
        if (rows.length === 1000) continue;
        if (!run || isTerminal(run.status) || signal.aborted) return;
        await Promise.race([ev.promise, done.promise]);
      } finally {
        ev.cancel();
        done.cancel();
      }
    }
  }

  /**
   * Checks a thread stream request before the stream opens: the thread (404), the stream mode and the
   * Last-Event-ID (422).
   */
  async openThreadStream(threadId: string, query: unknown, lastEventId: string | undefined): Promise<{ threadId: string; after: ThreadStreamCursor | null }> {
    parseOrThrow(agentThreadStreamQuerySchema, query ?? {}, ['query']);
    const after = lastEventId === undefined ? null : parseOrThrow(agentThreadEventIdSchema, lastEventId, ['header', 'last-event-id']);
    const thread = await this.getThread(threadId);
    return { threadId: thread.thread_id, after };
  }

  /**
   * A thread's run events, run after run, until `signal` aborts (or the thread is deleted): from the run
   * running or next to run when the stream opens (else from the next run created), or resumed after an
   * event. A run whose events were not kept gives its end state (as its own stream does).
   */
  async *threadEvents(threadId: string, after: ThreadStreamCursor | null, signal: AbortSignal): AsyncGenerator<ThreadStreamEvent> {
    // Subscribed before anything is read, so that a run started meanwhile is not missed. Every run that
    // starts writes an event or ends, each notified with its id; an id looked up once wakes it no more.
    const looked = new Set<string>();
    let dirty = false;
    let wake: (() => void) | null = null;
    const poke = (runId: string) => {
      if (looked.has(runId)) return;
      if (looked.size >= 10_000) looked.clear();
      if (runId !== '*') looked.add(runId);
      dirty = true;
      wake?.();
    };
    const offs = [this.notifier.on(CHANNELS.events, poke), this.notifier.on(CHANNELS.done, poke)];
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const resumed = after ? await this.repo.threadRun(threadId, after.run_id) : null;
      // A Last-Event-ID of a run that is gone (rolled back, deleted) restarts as a new stream would. The
      // newest run is read before the active one: a run created in between is then found either way.
      let position: ThreadRunPosition | null = resumed ? null : await this.repo.latestThreadRunPosition(threadId);
      let current: ThreadRun | null = resumed ?? (await this.repo.firstActiveThreadRun(threadId));
      let from = resumed && after ? after.seq : 0;
      for (;;) {
        if (current) {
          yield* this.threadRunEvents(threadId, current.run, from, signal);
          position = current.position;
          current = null;
          from = 0;
        }
        if (signal.aborted) return;
        dirty = false;
        const next = await this.repo.nextThreadRun(threadId, position);
        if (!next) return;
        current = next.run;
        if (current || dirty) continue;
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (signal.aborted) resolve();
        });
        wake = null;
      }
    } finally {
      for (const off of offs) off();
      signal.removeEventListener('abort', onAbort);
    }
  }

  /** One run's part of a thread stream: its metadata (event 0), then its events after `after`. */
  private async *threadRunEvents(threadId: string, run: RunRow, after: number, signal: AbortSignal): AsyncGenerator<ThreadStreamEvent> {
    const id = (seq: number) => `${run.run_id}:${seq}`;
    if (after === 0) yield { id: id(0), event: 'metadata', data: JSON.stringify({ run_id: run.run_id, attempt: run.attempt || 1 }) };
    for await (const e of this.events(threadId, run.run_id, after, signal)) yield { id: id(e.seq), event: e.event, data: e.data };
    if (signal.aborted || (run.kwargs as { record_events?: boolean }).record_events !== false || after > 0) return;
    const ended = await this.waitForEnd(threadId, run.run_id, signal);
    // event 1 of a run that kept none: resuming after it does not give it again
    if (ended && !signal.aborted) yield { id: id(1), ...AgentService.endEvent(ended) };
  }

  /** Removes the temporary thread of a stateless run once its caller has the result. */
  async dropTemporaryThread(run: RunRow): Promise<void> {
    if ((run.kwargs as { temporary?: boolean }).temporary) await this.repo.deleteThread(run.thread_id);
  }

  async cancelQuietly(threadId: string, runId: string): Promise<void> {
    await this.cancelAndReport(threadId, runId, 'interrupt').catch(() => undefined);
  }
}

function emptyState(): AgentThreadState {
  return { values: {}, next: [], tasks: [], checkpoint: null, metadata: null, created_at: null, parent_checkpoint: null, interrupts: [] };
}

function checkpointOf(c: { configurable?: Record<string, unknown> } | undefined): AgentThreadState['checkpoint'] {
  const cf = c?.configurable;
  if (!cf?.checkpoint_id) return null;
  return { thread_id: String(cf.thread_id), checkpoint_ns: String(cf.checkpoint_ns ?? ''), checkpoint_id: String(cf.checkpoint_id), checkpoint_map: cf.checkpoint_map ?? null };
}

function toState(s: StateSnapshotLike): AgentThreadState {
  const tasks = (s.tasks ?? []).map((t) => ({
    id: t.id,
    name: t.name,
    error: t.error ? String((t.error as Error).message ?? t.error) : null,
    interrupts: toWire(t.interrupts ?? []),
    checkpoint: null,
    state: t.state ? toWire(t.state) : null,
    result: toWire(t.result) ?? null,
  }));
  return {
    values: toWire(s.values) ?? {},
    next: s.next ?? [],
    tasks,
    checkpoint: checkpointOf(s.config),
    metadata: toWire(s.metadata) ?? null,
    created_at: s.createdAt ?? null,
    parent_checkpoint: checkpointOf(s.parentConfig),
    interrupts: tasks.flatMap((t) => t.interrupts as unknown[]),
  };
}

let zodSchema: Record<string, ((g: unknown) => unknown) | undefined> | null | undefined;
/** LangGraph's JSON Schema export of zod-defined state (loaded once; absent in older releases). */
function zodSchemaHelpers(): Record<string, ((g: unknown) => unknown) | undefined> | null {
  if (zodSchema === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      zodSchema = require('@langchain/langgraph/zod/schema') as Record<string, (g: unknown) => unknown>;
    } catch {
      zodSchema = null;
    }
  }
  return zodSchema;
}

function schemasOf(graph: unknown): Omit<AgentGraphSchemas, 'graph_id'> {
  const h = zodSchemaHelpers();
  const one = (name: string): unknown => {
    try {
      return h?.[name]?.(graph) ?? null;
    } catch {
      return null;
    }
  };
  const config = one('getConfigTypeSchema');
  return { input_schema: one('getInputTypeSchema'), output_schema: one('getOutputTypeSchema'), state_schema: one('getStateTypeSchema'), config_schema: config, context_schema: config };
}

/**
 * The published client's createBatch sends each payload as given (camelCase keys, plus assistant_id):
 * top-level keys become snake_case and the duplicate assistantId is dropped.
 */
function snakeKeys(item: unknown): unknown {
  if (!item || typeof item !== 'object' || Array.isArray(item)) return item;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item as Record<string, unknown>)) {
    if (k === 'assistantId' && 'assistant_id' in (item as Record<string, unknown>)) continue;
    out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  }
  return out;
}
