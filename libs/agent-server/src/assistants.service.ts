import { randomUUID } from 'node:crypto';
import { agentAssistantCreateSchema, agentAssistantGraphQuerySchema, agentAssistantCountSchema, agentAssistantSearchSchema, agentAssistantSetLatestSchema, agentAssistantSubgraphsQuerySchema, agentAssistantUpdateSchema, agentAssistantVersionsSchema, type AgentAssistantVersion, type AgentGraphSchemas, agentAssistantDeleteQuerySchema, type AgentAssistant } from '@th/contracts';
import { conflict, notFound, parseOrThrow } from '@th/platform';
import type { AgentRepositories } from './agent-repositories';
import type { CompiledGraphLike, LoadedGraph } from './graph-registry';
import { toWire } from './serialize';
import { UUID, pathId, schemasOf } from './agent-helpers';

/** Assistants: the defaults (one per graph), versions, and their graphs' schemas. */
export class AssistantsService {
  constructor(
    private readonly repo: AgentRepositories,
    private readonly graphs: Map<string, LoadedGraph>,
  ) {}

  /** Default assistants (one per graph) never change: kept in memory once read. */
  private readonly defaults = new Map<string, AgentAssistant>();

  async resolveAssistant(idOrGraph: string): Promise<AgentAssistant> {
    const byGraph = this.graphs.get(idOrGraph);
    const id = byGraph ? byGraph.assistantId : UUID.test(idOrGraph) ? idOrGraph.toLowerCase() : null;
    if (id && this.defaults.has(id)) return this.defaults.get(id)!;
    const a = id ? await this.repo.assistants.getAssistant(id) : null;
    if (!a) throw notFound(`Assistant ${idOrGraph}`);
    if ([...this.graphs.values()].some((g) => g.assistantId === a.assistant_id)) this.defaults.set(a.assistant_id, a);
    return a;
  }

  async createAssistant(body: unknown): Promise<AgentAssistant> {
    const a = parseOrThrow(agentAssistantCreateSchema, body ?? {}, ['body']);
    if (!this.graphs.has(a.graph_id)) throw notFound(`Graph ${a.graph_id}`);
    const id = a.assistant_id?.toLowerCase() ?? randomUUID();
    const created = await this.repo.assistants.createAssistant(id, a);
    if (created) return created;
    if (a.if_exists === 'do_nothing') return (await this.repo.assistants.getAssistant(id))!;
    throw conflict(`Assistant ${id} already exists`);
  }

  async searchAssistants(body: unknown): Promise<{ items: AgentAssistant[]; next: number | null; total: number }> {
    const q = parseOrThrow(agentAssistantSearchSchema, body ?? {}, ['body']);
    const { items, total } = await this.repo.assistants.searchAssistants(q);
    return { items, total, next: q.offset + items.length < total ? q.offset + items.length : null };
  }

  /** POST /assistants/count: how many assistants the same filters as search match. */
  countAssistants(body: unknown): Promise<number> {
    return this.repo.assistants.countAssistants(parseOrThrow(agentAssistantCountSchema, body ?? {}, ['body']));
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
    const a = await this.repo.assistants.updateAssistant(aid, u);
    if (!a) throw notFound(`Assistant ${id}`);
    return a;
  }

  async assistantVersions(id: string, body: unknown): Promise<AgentAssistantVersion[]> {
    const q = parseOrThrow(agentAssistantVersionsSchema, body ?? {}, ['body']);
    const assistant = await this.resolveAssistant(id);
    const versions = await this.repo.assistants.listAssistantVersions(assistant.assistant_id, q);
    if (!versions) throw notFound(`Assistant ${id}`);
    return versions;
  }

  async setLatestVersion(id: string, body: unknown): Promise<AgentAssistant> {
    const { version } = parseOrThrow(agentAssistantSetLatestSchema, body ?? {}, ['body']);
    const aid = pathId(id, 'assistant_id');
    if (this.isDefault(aid)) throw conflict(`Assistant ${aid} is the default assistant of its graph and cannot be changed`);
    const r = await this.repo.assistants.setLatestAssistantVersion(aid, version);
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
    if (!(await this.repo.assistants.deleteAssistant(assistantId))) throw notFound(`Assistant ${id}`);
    if (q.delete_threads) for (const threadId of await this.repo.threads.threadsOfAssistant(assistantId)) await this.repo.threads.deleteThread(threadId);
  }
}
