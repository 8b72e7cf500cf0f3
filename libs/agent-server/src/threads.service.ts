import { randomUUID } from 'node:crypto';
import { agentThreadPatchStateSchema, agentThreadStateAtSchema, agentThreadUpdateStateSchema, agentThreadCreateSchema, agentThreadHistorySchema, agentThreadPatchSchema, agentThreadCountSchema, agentThreadSearchSchema, type AgentThread, type AgentThreadCreate, type AgentThreadState } from '@th/contracts';
import { ValidationFailed, conflict, notFound, parseOrThrow } from '@th/platform';
import { toThread } from './agent.repository';
import type { AgentRepositories } from './agent-repositories';
import type { CompiledGraphLike, LoadedGraph } from './graph-registry';
import { toWire } from './serialize';
import { asInvalidUpdate, pathId, emptyState, checkpointOf, toState } from './agent-helpers';

/** Threads and their state: checkpoints, history, updates, copies, expiry. */
export class ThreadsService {
  constructor(
    private readonly repo: AgentRepositories,
    private readonly graphs: Map<string, LoadedGraph>,
  ) {}

  async createThread(body: unknown): Promise<AgentThread> {
    const t = parseOrThrow(agentThreadCreateSchema, body ?? {}, ['body']);
    const id = t.thread_id?.toLowerCase() ?? randomUUID();
    const supersteps = t.supersteps?.length ? this.checkSupersteps(t.supersteps, t.metadata?.graph_id) : null;
    const created = await this.repo.threads.createThread(id, t.metadata ?? {}, false, t.ttl ?? null);
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
  private async applySupersteps(id: string, s: ReturnType<ThreadsService['checkSupersteps']>): Promise<AgentThread> {
    const graph = s.graph as CompiledGraphLike & { bulkUpdateState(config: unknown, steps: unknown): Promise<unknown> };
    try {
      await this.repo.threads.setThreadGraph(id, s.graphId);
      await graph.bulkUpdateState({ configurable: { thread_id: id, checkpoint_ns: '' } }, s.steps);
      await this.mirrorState(id, graph);
    } catch (err) {
      await this.repo.threads.deleteThread(id);
      throw asInvalidUpdate(err, ['body', 'supersteps']);
    }
    return this.getThread(id);
  }

  /** The thread row mirrors the graph's current state after a state update (committed checkpoints). */
  private async mirrorState(threadId: string, graph: CompiledGraphLike): Promise<void> {
    const state = await graph.getState({ configurable: { thread_id: threadId } });
    const interrupted = (state.tasks ?? []).some((x) => (x.interrupts ?? []).length > 0);
    await this.repo.threads.setThreadState(threadId, toWire(state.values) ?? {}, interrupted ? 'interrupted' : 'idle');
  }

  async getThread(id: string): Promise<AgentThread> {
    const t = await this.repo.threads.getThreadRow(pathId(id, 'thread_id'));
    if (!t || t.stateless) throw notFound(`Thread ${id}`);
    return toThread(t);
  }

  async patchThread(id: string, body: unknown): Promise<AgentThread> {
    const p = parseOrThrow(agentThreadPatchSchema, body ?? {}, ['body']);
    const t = await this.repo.threads.patchThread(pathId(id, 'thread_id'), p.metadata ?? {}, p.ttl ?? null);
    if (!t) throw notFound(`Thread ${id}`);
    return t;
  }

  /** POST /threads/count: how many threads the same filters as search match. */
  countThreads(body: unknown): Promise<number> {
    return this.repo.threads.countThreads(parseOrThrow(agentThreadCountSchema, body ?? {}, ['body']));
  }

  searchThreads(body: unknown): Promise<AgentThread[]> {
    return this.repo.threads.searchThreads(parseOrThrow(agentThreadSearchSchema, body ?? {}, ['body']));
  }

  /** POST /threads/{id}/copy: the thread and its checkpoint history under a new id (runs are not copied). */
  async copyThread(id: string): Promise<AgentThread> {
    const t = await this.repo.threads.copyThread(pathId(id, 'thread_id'), randomUUID());
    if (!t) throw notFound(`Thread ${id}`);
    return t;
  }

  async deleteThread(id: string): Promise<void> {
    if ((await this.repo.threads.deleteThread(pathId(id, 'thread_id'))) === null) throw notFound(`Thread ${id}`);
  }

  /**
   * Deletes threads whose ttl ran out (as DELETE /threads/{id} does: runs, checkpoints, and running runs
   * cancelled), at most `limit` per call; returns how many. Several processes may sweep at once: a
   * thread another one deleted first is skipped.
   */
  async sweepExpiredThreads(limit = 100): Promise<number> {
    let n = 0;
    for (const id of await this.repo.threads.expiredThreads(limit)) if ((await this.repo.threads.deleteThread(id)) !== null) n++;
    return n;
  }

  private async threadGraph(id: string): Promise<CompiledGraphLike | null> {
    const t = await this.repo.threads.getThreadRow(pathId(id, 'thread_id'));
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
    const t = await this.repo.threads.getThreadRow(tid);
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
    const t = await this.repo.threads.getThreadRow(tid);
    if (!t || t.stateless) throw notFound(`Thread ${id}`);
    const checkpointId = b.checkpoint_id ?? b.checkpoint?.checkpoint_id ?? null;
    if (await this.repo.threads.patchCheckpointMetadata(tid, b.checkpoint?.checkpoint_ns ?? '', checkpointId, b.metadata)) return;
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
}
