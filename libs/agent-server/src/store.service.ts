import {
  agentStoreDeleteSchema,
  agentStoreGetQuerySchema,
  agentStoreNamespacesSchema,
  agentStorePutSchema,
  agentStoreSearchSchema,
  type AgentStoreItem,
  type AgentStoreSearchItem,
} from '@th/contracts';
import { parseOrThrow } from '@th/platform';
import type { StoreRepository } from './store.repository';

/** Reads refresh an item's ttl unless told not to (LangGraph's TTLConfig default, refresh_on_read). */
const REFRESH_ON_READ = true;

/**
 * The Store API (client.store.*): items by namespace and key, with LangGraph's ttl in minutes.
 * There is no embedding index: `index` on put and `query` on search are accepted and ignored, and
 * every search result has score null.
 */
export class StoreService {
  constructor(private readonly repo: StoreRepository) {}

  async putItem(body: unknown): Promise<void> {
    const b = parseOrThrow(agentStorePutSchema, body ?? {}, ['body']);
    await this.repo.putItem(b.namespace, b.key, b.value, b.ttl ?? null);
  }

  /** A missing (or expired) item is null, as the published client's getItem expects (200 with a JSON null). */
  async getItem(query: unknown): Promise<AgentStoreItem | null> {
    const q = parseOrThrow(agentStoreGetQuerySchema, query ?? {}, ['query']);
    return this.repo.getItem(q.namespace, q.key, q.refresh_ttl ?? REFRESH_ON_READ);
  }

  async deleteItem(body: unknown): Promise<void> {
    const b = parseOrThrow(agentStoreDeleteSchema, body ?? {}, ['body']);
    await this.repo.deleteItem(b.namespace, b.key);
  }

  async searchItems(body: unknown): Promise<{ items: AgentStoreSearchItem[] }> {
    const q = parseOrThrow(agentStoreSearchSchema, body ?? {}, ['body']);
    const items = await this.repo.searchItems(q, q.refresh_ttl ?? REFRESH_ON_READ);
    return { items: items.map((i) => ({ ...i, score: null })) };
  }

  async listNamespaces(body: unknown): Promise<{ namespaces: string[][] }> {
    const q = parseOrThrow(agentStoreNamespacesSchema, body ?? {}, ['body']);
    return { namespaces: await this.repo.listNamespaces(q) };
  }
}
