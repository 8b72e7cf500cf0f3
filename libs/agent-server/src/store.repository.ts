import type { Pool } from 'pg';
import type { AgentStoreItem, AgentStoreNamespaces, AgentStoreSearch } from '@th/contracts';
import { AGENT_SCHEMA } from './migrations';

const S = AGENT_SCHEMA;

interface StoreRow {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'namespace, key, value, created_at, updated_at';
/** An item is live until its expires_at; an expired row is never answered, and the read that meets it deletes it. */
const LIVE = '(expires_at IS NULL OR expires_at > now())';
const EXPIRED = 'expires_at <= now()';
/** A read with refresh_ttl pushes expires_at back by the item's own ttl (LangGraph's refresh_on_read). */
const refreshFrom = (hits: string, flag: string) =>
  `UPDATE ${S}.store_items s SET expires_at = now() + s.ttl_minutes * interval '1 minute'
   FROM ${hits} h WHERE ${flag} AND s.namespace = h.namespace AND s.key = h.key AND s.ttl_minutes IS NOT NULL`;

export const toStoreItem = (r: StoreRow): AgentStoreItem => ({
  namespace: r.namespace,
  key: r.key,
  value: r.value,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

/**
 * A list-namespaces match condition: the namespace starts (or ends) with `labels`, where a '*' label
 * matches any one label. The labels are pushed onto `params`.
 */
function matches(side: 'prefix' | 'suffix', labels: string[], params: unknown[]): string {
  const p = `$${params.push(labels)}::text[]`;
  const at = side === 'prefix' ? 'm.i::int' : `cardinality(namespace) - cardinality(${p}) + m.i::int`;
  return `(cardinality(namespace) >= cardinality(${p})
    AND NOT EXISTS (SELECT 1 FROM unnest(${p}) WITH ORDINALITY AS m(label, i) WHERE m.label <> '*' AND namespace[${at}] <> m.label))`;
}

/** The only code that speaks SQL for the Store API's items. */
export class StoreRepository {
  constructor(private readonly pool: Pool) {}

  /** Inserts or overwrites an item; an overwrite keeps created_at unless the old item had expired. */
  async putItem(namespace: string[], key: string, value: Record<string, unknown>, ttlMinutes: number | null): Promise<void> {
    await this.pool.query(
      `INSERT INTO ${S}.store_items AS s (namespace, key, value, ttl_minutes, expires_at)
       VALUES ($1::text[], $2, $3::jsonb, $4::float8, now() + $4::float8 * interval '1 minute')
       ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, ttl_minutes = EXCLUDED.ttl_minutes, expires_at = EXCLUDED.expires_at,
         updated_at = now(), created_at = CASE WHEN s.expires_at <= now() THEN now() ELSE s.created_at END`,
      [namespace, key, JSON.stringify(value), ttlMinutes],
    );
  }

  /** A live item, or null (an expired one is deleted on the way). */
  async getItem(namespace: string[], key: string, refreshTtl: boolean): Promise<AgentStoreItem | null> {
    const r = await this.pool.query<StoreRow>(
      `WITH swept AS (DELETE FROM ${S}.store_items WHERE namespace = $1::text[] AND key = $2 AND ${EXPIRED}),
         hit AS (SELECT ${COLUMNS} FROM ${S}.store_items WHERE namespace = $1::text[] AND key = $2 AND ${LIVE}),
         refreshed AS (${refreshFrom('hit', '$3::boolean')})
       SELECT ${COLUMNS} FROM hit`,
      [namespace, key, refreshTtl],
    );
    return r.rows[0] ? toStoreItem(r.rows[0]) : null;
  }

  /** Deleting an absent item is not an error (the reference server answers 204 either way). */
  async deleteItem(namespace: string[], key: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${S}.store_items WHERE namespace = $1::text[] AND key = $2`, [namespace, key]);
  }

  /**
   * Live items under a namespace prefix whose value has each filter field equal to the given JSON,
   * most recently updated first (the order of LangGraph's PostgresStore without a query).
   */
  async searchItems(q: AgentStoreSearch, refreshTtl: boolean): Promise<AgentStoreItem[]> {
    const params: unknown[] = [q.namespace_prefix];
    const prefix = `namespace[1:cardinality($1::text[])] = $1::text[]`;
    const filters = Object.entries(q.filter ?? {}).map(([k, v]) => `value -> $${params.push(k)}::text = $${params.push(JSON.stringify(v))}::jsonb`);
    const where = [LIVE, prefix, ...filters].join(' AND ');
    const order = 'ORDER BY updated_at DESC, namespace, key';
    const r = await this.pool.query<StoreRow>(
      `WITH swept AS (DELETE FROM ${S}.store_items WHERE ${EXPIRED} AND ${prefix}),
         page AS (SELECT ${COLUMNS} FROM ${S}.store_items WHERE ${where} ${order} LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}),
         refreshed AS (${refreshFrom('page', `$${params.push(refreshTtl)}::boolean`)})
       SELECT ${COLUMNS} FROM page ${order}`,
      params,
    );
    return r.rows.map(toStoreItem);
  }

  /** Distinct namespaces of live items (cut to max_depth labels), in label order. */
  async listNamespaces(q: AgentStoreNamespaces): Promise<string[][]> {
    const params: unknown[] = [];
    const match: string[] = [];
    if (q.prefix?.length) match.push(matches('prefix', q.prefix, params));
    if (q.suffix?.length) match.push(matches('suffix', q.suffix, params));
    const scope = match.length ? match.join(' AND ') : 'true';
    const depth = q.max_depth ? `namespace[1:$${params.push(q.max_depth)}::int]` : 'namespace';
    const r = await this.pool.query<{ namespace: string[] }>(
      `WITH swept AS (DELETE FROM ${S}.store_items WHERE ${EXPIRED} AND ${scope})
       SELECT DISTINCT ${depth} AS namespace FROM ${S}.store_items WHERE ${LIVE} AND ${scope}
       ORDER BY 1 LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return r.rows.map((row) => row.namespace);
  }
}
