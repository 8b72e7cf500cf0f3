import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { SavedFilter, TenantScope } from '@th/contracts';

interface Row {
  id: string;
  session_id: string;
  name: string;
  filter: string;
  created_at: Date;
}
const present = (r: Row): SavedFilter => ({ id: r.id, session_id: r.session_id, name: r.name, filter: r.filter, created_at: new Date(r.created_at).toISOString() });
const COLUMNS = 'id, session_id, name, filter, created_at';

/** The only SQL of saved filters ("query"."saved_filters"); every read and write is bound to a tenant and a project. */
export class SavedFiltersRepository {
  constructor(private readonly ds: DataSource) {}

  async list(scope: TenantScope, sessionId: string): Promise<SavedFilter[]> {
    const rows = (await this.ds.query(`SELECT ${COLUMNS} FROM "query"."saved_filters" WHERE tenant_id = $1 AND session_id = $2 ORDER BY name`, [scope.tenant_id, sessionId])) as Row[];
    return rows.map(present);
  }

  /**
   * Inserts unless the project already has `max` filters or one of this name (null: the name is taken).
   * The count and the insert are one statement, so two concurrent saves cannot pass the bound together
   * by more than the unique index allows.
   */
  async insert(scope: TenantScope, sessionId: string, name: string, filter: string, max: number): Promise<SavedFilter | 'full' | null> {
    const rows = (await this.ds.query(
      `INSERT INTO "query"."saved_filters" (id, tenant_id, session_id, name, filter)
       SELECT $1, $2, $3, $4, $5 WHERE (SELECT count(*) FROM "query"."saved_filters" WHERE tenant_id = $2 AND session_id = $3) < $6
       ON CONFLICT DO NOTHING RETURNING ${COLUMNS}`,
      [randomUUID(), scope.tenant_id, sessionId, name, filter, max],
    )) as Row[];
    if (rows[0]) return present(rows[0]);
    const count = (await this.ds.query(`SELECT count(*)::int AS n FROM "query"."saved_filters" WHERE tenant_id = $1 AND session_id = $2`, [scope.tenant_id, sessionId])) as { n: number }[];
    return (count[0]?.n ?? 0) >= max ? 'full' : null;
  }

  async delete(scope: TenantScope, sessionId: string, id: string): Promise<boolean> {
    const rows = (await this.ds.query(`DELETE FROM "query"."saved_filters" WHERE tenant_id = $1 AND session_id = $2 AND id = $3 RETURNING id`, [scope.tenant_id, sessionId, id])) as unknown[];
    // node-postgres answers a DELETE ... RETURNING as [rows, count] through TypeORM's query().
    const deleted = Array.isArray(rows[0]) ? (rows[0] as unknown[]) : rows;
    return deleted.length > 0;
  }
}
