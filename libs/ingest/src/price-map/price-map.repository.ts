import { Injectable } from '@nestjs/common';
import { ClickHouse, chTime, isoFromCh } from '@th/clickhouse';
import type { ModelPriceMap } from '@th/contracts';

interface Row {
  tenant_id: string;
  id: string;
  name: string;
  match_pattern: string;
  provider: string | null;
  prompt_cost: number;
  completion_cost: number;
  prompt_cost_details: string;
  completion_cost_details: string;
  start_time: string | null;
  match_path: string[];
  created_at: string;
  modified_at: string;
}

const COLUMNS =
  'tenant_id, id, name, match_pattern, provider, prompt_cost, completion_cost, prompt_cost_details, completion_cost_details, start_time, match_path, created_at, modified_at';

function fromRow(r: Row): ModelPriceMap {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    name: r.name,
    match_pattern: r.match_pattern,
    provider: r.provider,
    prompt_cost: Number(r.prompt_cost),
    completion_cost: Number(r.completion_cost),
    prompt_cost_details: r.prompt_cost_details ? (JSON.parse(r.prompt_cost_details) as Record<string, number>) : null,
    completion_cost_details: r.completion_cost_details ? (JSON.parse(r.completion_cost_details) as Record<string, number>) : null,
    start_time: r.start_time ? isoFromCh(r.start_time) : null,
    match_path: r.match_path,
    created_at: isoFromCh(r.created_at),
    modified_at: isoFromCh(r.modified_at),
  };
}

/**
 * Counts the price-map writes of this process that have landed. A read that started before one of
 * them may be stale; a read that started after one has seen it.
 */
let writesLanded = 0;

/** A workspace's model price maps in ClickHouse: the writer prices runs from the same store it writes. */
@Injectable()
export class PriceMapRepository {
  private lastVersion = 0;
  constructor(private readonly ch: ClickHouse) {}

  async listForTenants(tenants: string[]): Promise<Map<string, ModelPriceMap[]>> {
    const out = new Map<string, ModelPriceMap[]>();
    if (tenants.length === 0) return out;
    const rows = await this.ch.query<Row>(
      `SELECT ${COLUMNS} FROM model_price_map FINAL WHERE tenant_id IN {tenants:Array(UUID)} AND is_deleted = 0 ORDER BY created_at, id`,
      { tenants },
    );
    for (const r of rows) {
      const list = out.get(r.tenant_id) ?? [];
      list.push(fromRow(r));
      out.set(r.tenant_id, list);
    }
    return out;
  }

  async get(tenant: string, id: string): Promise<ModelPriceMap | null> {
    const rows = await this.ch.query<Row>(
      `SELECT ${COLUMNS} FROM model_price_map FINAL WHERE tenant_id = {tenant:UUID} AND id = {id:UUID} AND is_deleted = 0`,
      { tenant, id },
    );
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /** Writes the entry's new version; resolves once ClickHouse has the row. */
  async put(entry: ModelPriceMap & { tenant_id: string }, deleted = false): Promise<void> {
    this.lastVersion = Math.max(this.lastVersion + 1, Date.now() * 1000);
    const row = {
      tenant_id: entry.tenant_id,
      id: entry.id,
      name: entry.name,
      match_pattern: entry.match_pattern,
      provider: entry.provider,
      prompt_cost: entry.prompt_cost,
      completion_cost: entry.completion_cost,
      prompt_cost_details: entry.prompt_cost_details ? JSON.stringify(entry.prompt_cost_details) : '',
      completion_cost_details: entry.completion_cost_details ? JSON.stringify(entry.completion_cost_details) : '',
      start_time: entry.start_time ? chTime(entry.start_time) : null,
      match_path: entry.match_path,
      created_at: chTime(entry.created_at ?? new Date().toISOString()),
      modified_at: chTime(entry.modified_at ?? new Date().toISOString()),
      version: this.lastVersion,
      is_deleted: deleted ? 1 : 0,
    };
    try {
      await this.ch.insertJsonEachRow('model_price_map', Buffer.from(JSON.stringify(row)));
    } finally {
      writesLanded++; // even a failed insert may have landed
    }
  }
}

/**
 * The price maps the writer prices runs with, kept in memory between batches. Only where every write
 * of price maps goes through this process (standalone): a write made elsewhere would never be seen.
 * A write through this process empties it once it has landed, so the next batch reads the new maps.
 */
export class PriceMapCache {
  private readonly byTenant = new Map<string, ModelPriceMap[]>();
  private seen = writesLanded;

  constructor(
    private readonly repo: PriceMapRepository,
    private readonly maxTenants = 10_000,
  ) {}

  async listForTenants(tenants: string[]): Promise<Map<string, ModelPriceMap[]>> {
    const at = writesLanded;
    if (at !== this.seen || this.byTenant.size > this.maxTenants) {
      this.byTenant.clear();
      this.seen = at;
    }
    const missing = tenants.filter((t) => !this.byTenant.has(t));
    const read = missing.length > 0 ? await this.repo.listForTenants(missing) : new Map<string, ModelPriceMap[]>();
    // Kept only if no write landed during the read (the read may have missed it).
    if (writesLanded === at) for (const t of missing) this.byTenant.set(t, read.get(t) ?? []);
    const out = new Map<string, ModelPriceMap[]>();
    for (const t of tenants) out.set(t, read.get(t) ?? this.byTenant.get(t) ?? []);
    return out;
  }
}
