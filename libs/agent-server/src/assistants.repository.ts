import type { AgentAssistant, AgentAssistantCreate, AgentAssistantCount, AgentAssistantSearch, AgentAssistantUpdate, AgentAssistantVersion, AgentAssistantVersions } from '@th/contracts';
import { S, type AssistantRow, toVersion, toAssistant, SNAPSHOT_VERSION, json, AgentDb } from './agent.repository';

/** Assistants and their versions. */
export class AssistantsRepository extends AgentDb {
  async ensureDefaultAssistants(graphs: { graphId: string; assistantId: string }[]): Promise<void> {
    for (const g of graphs) {
      await this.pool.query(
        `INSERT INTO ${S}.assistants (assistant_id, graph_id, name, metadata) VALUES ($1, $2, $2, '{"created_by":"system"}')
         ON CONFLICT (assistant_id) DO NOTHING`,
        [g.assistantId, g.graphId],
      );
      await this.pool.query(SNAPSHOT_VERSION, [g.assistantId]);
    }
  }

  async createAssistant(id: string, a: AgentAssistantCreate): Promise<AgentAssistant | null> {
    // One statement: the assistant and its version 1.
    const sql = `WITH ins AS (INSERT INTO ${S}.assistants (assistant_id, graph_id, name, description, config, context, metadata)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (assistant_id) DO NOTHING RETURNING *),
     v AS (INSERT INTO ${S}.assistant_versions (assistant_id, version, graph_id, name, description, config, context, metadata, created_at)
       SELECT assistant_id, version, graph_id, name, description, config, context, metadata, updated_at FROM ins)
     SELECT * FROM ins`;
    const r = await this.pool.query<AssistantRow>(sql, [
      id,
      a.graph_id,
      a.name ?? a.graph_id,
      a.description ?? null,
      json(a.config ?? {}),
      json(a.context ?? {}),
      json(a.metadata ?? {}),
    ]);
    return r.rows[0] ? toAssistant(r.rows[0]) : null;
  }

  async getAssistant(id: string): Promise<AgentAssistant | null> {
    const r = await this.pool.query<AssistantRow>(`SELECT * FROM ${S}.assistants WHERE assistant_id = $1`, [id]);
    return r.rows[0] ? toAssistant(r.rows[0]) : null;
  }

  /**
   * Stores a change as a new version (the highest so far plus one) and makes it current, in one
   * transaction under the assistant's row lock. Null when the assistant does not exist.
   */
  async updateAssistant(id: string, u: AgentAssistantUpdate): Promise<AgentAssistant | null> {
    return this.tx(async (c) => {
      const cur = await c.query<AssistantRow>(`SELECT * FROM ${S}.assistants WHERE assistant_id = $1 FOR UPDATE`, [id]);
      if (!cur.rowCount) return null;
      const a = cur.rows[0];
      const max = await c.query<{ v: number }>(`SELECT COALESCE(max(version), 0) AS v FROM ${S}.assistant_versions WHERE assistant_id = $1`, [id]);
      const version = Math.max(Number(max.rows[0].v), a.version) + 1;
      const r = await c.query<AssistantRow>(
        `UPDATE ${S}.assistants SET graph_id = $2, name = $3, description = $4, config = $5, context = $6, metadata = $7, version = $8, updated_at = now()
         WHERE assistant_id = $1 RETURNING *`,
        [
          id,
          u.graph_id ?? a.graph_id,
          u.name ?? a.name,
          u.description !== undefined ? u.description : a.description,
          json(u.config ?? a.config),
          json(u.context ?? a.context),
          json({ ...a.metadata, ...(u.metadata ?? {}) }),
          version,
        ],
      );
      await c.query(SNAPSHOT_VERSION, [id]);
      return toAssistant(r.rows[0]);
    });
  }

  /** An assistant's versions, newest first; null when the assistant does not exist. */
  async listAssistantVersions(id: string, q: AgentAssistantVersions): Promise<AgentAssistantVersion[] | null> {
    const exists = await this.pool.query(`SELECT 1 FROM ${S}.assistants WHERE assistant_id = $1`, [id]);
    if (!exists.rowCount) return null;
    const params: unknown[] = [id];
    const cond = q.metadata !== undefined ? `AND metadata @> $${params.push(json(q.metadata))}::jsonb` : '';
    const r = await this.pool.query<Omit<AssistantRow, 'updated_at'>>(
      `SELECT * FROM ${S}.assistant_versions WHERE assistant_id = $1 ${cond} ORDER BY version DESC LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return r.rows.map(toVersion);
  }

  /** Makes a stored version current; 'absent' when the assistant or the version does not exist. */
  async setLatestAssistantVersion(id: string, version: number): Promise<AgentAssistant | 'no_assistant' | 'no_version'> {
    return this.tx(async (c) => {
      const cur = await c.query(`SELECT 1 FROM ${S}.assistants WHERE assistant_id = $1 FOR UPDATE`, [id]);
      if (!cur.rowCount) return 'no_assistant';
      const r = await c.query<AssistantRow>(
        `UPDATE ${S}.assistants a SET graph_id = v.graph_id, name = v.name, description = v.description, config = v.config, context = v.context,
           metadata = v.metadata, version = v.version, updated_at = now()
         FROM ${S}.assistant_versions v WHERE a.assistant_id = $1 AND v.assistant_id = $1 AND v.version = $2 RETURNING a.*`,
        [id, version],
      );
      return r.rows[0] ? toAssistant(r.rows[0]) : 'no_version';
    });
  }

  async deleteAssistant(id: string): Promise<boolean> {
    const r = await this.pool.query(`DELETE FROM ${S}.assistants WHERE assistant_id = $1`, [id]);
    return (r.rowCount ?? 0) > 0;
  }

  /** The WHERE clause of an assistant search or count (with its parameters pushed onto `params`). */
  private assistantFilter(q: AgentAssistantCount, params: unknown[]): string {
    const where: string[] = [];
    if (q.graph_id !== undefined) where.push(`graph_id = $${params.push(q.graph_id)}`);
    if (q.name !== undefined) where.push(`name ILIKE $${params.push(`%${q.name.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)}`);
    if (q.metadata !== undefined) where.push(`metadata @> $${params.push(json(q.metadata))}::jsonb`);
    return where.length ? `WHERE ${where.join(' AND ')}` : '';
  }

  async countAssistants(q: AgentAssistantCount): Promise<number> {
    const params: unknown[] = [];
    const r = await this.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${S}.assistants ${this.assistantFilter(q, params)}`, params);
    return Number(r.rows[0].n);
  }

  async searchAssistants(q: AgentAssistantSearch): Promise<{ items: AgentAssistant[]; total: number }> {
    const params: unknown[] = [];
    const w = this.assistantFilter(q, params);
    const r = await this.pool.query<AssistantRow & { total: string }>(
      `SELECT *, count(*) OVER () AS total FROM ${S}.assistants ${w}
       ORDER BY ${q.sort_by} ${q.sort_order === 'desc' ? 'DESC' : 'ASC'}, assistant_id LIMIT $${params.push(q.limit)} OFFSET $${params.push(q.offset)}`,
      params,
    );
    return { items: r.rows.map(toAssistant), total: r.rows[0] ? Number(r.rows[0].total) : 0 };
  }
}
