import type { DataSource } from 'typeorm';
import type { TenantScope } from '@th/contracts';

export interface ListenerRow {
  id: string;
  tenant_id: string;
  name: string;
  compute_type: 'k8s';
  k8s_namespaces: string[];
  created_at: Date;
}

const T = `"control_plane"."listeners"`;

export class ListenersRepository {
  constructor(private readonly ds: DataSource) {}

  async insert(l: ListenerRow): Promise<boolean> {
    const rows = (await this.ds.query(
      `INSERT INTO ${T} (id, tenant_id, name, compute_type, k8s_namespaces, created_at) VALUES ($1,$2,$3,$4,$5,$6) ON CONFLICT (tenant_id, name) DO NOTHING RETURNING id`,
      [l.id, l.tenant_id, l.name, l.compute_type, JSON.stringify(l.k8s_namespaces), l.created_at],
    )) as unknown[];
    return rows.length > 0;
  }

  async find(scope: TenantScope, id: string): Promise<ListenerRow | null> {
    const rows = (await this.ds.query(`SELECT * FROM ${T} WHERE tenant_id = $1 AND id = $2`, [scope.tenant_id, id])) as ListenerRow[];
    return rows[0] ?? null;
  }

  async findById(id: string): Promise<ListenerRow | null> {
    const rows = (await this.ds.query(`SELECT * FROM ${T} WHERE id = $1`, [id])) as ListenerRow[];
    return rows[0] ?? null;
  }

  async list(scope: TenantScope, page: { offset: number; limit: number }): Promise<{ rows: ListenerRow[]; total: number }> {
    const [{ n }] = (await this.ds.query(`SELECT count(*)::int AS n FROM ${T} WHERE tenant_id = $1`, [scope.tenant_id])) as { n: number }[];
    const rows = (await this.ds.query(`SELECT * FROM ${T} WHERE tenant_id = $1 ORDER BY created_at, id OFFSET $2 LIMIT $3`, [scope.tenant_id, page.offset, page.limit])) as ListenerRow[];
    return { rows, total: n };
  }
}
