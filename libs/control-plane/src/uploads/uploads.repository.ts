import type { DataSource } from 'typeorm';
import type { TenantScope } from '@th/contracts';

const T = `"control_plane"."uploads"`;

export interface UploadRow {
  object_path: string;
  deployment_id: string;
  tenant_id: string;
  expires_at: Date;
  uploaded_at: Date | null;
  created_at: Date;
}

/** Source tarballs: an object path is issued for one deployment, then its bytes arrive by PUT. */
export class UploadsRepository {
  constructor(private readonly ds: DataSource) {}

  async issue(u: Omit<UploadRow, 'uploaded_at'>): Promise<void> {
    await this.ds.query(`INSERT INTO ${T} (object_path, deployment_id, tenant_id, expires_at, created_at) VALUES ($1,$2,$3,$4,$5)`, [
      u.object_path, u.deployment_id, u.tenant_id, u.expires_at, u.created_at,
    ]);
  }

  async find(objectPath: string): Promise<UploadRow | null> {
    const rows = (await this.ds.query(`SELECT object_path, deployment_id, tenant_id, expires_at, uploaded_at, created_at FROM ${T} WHERE object_path = $1`, [objectPath])) as UploadRow[];
    return rows[0] ?? null;
  }

  async findFor(scope: TenantScope, deploymentId: string, objectPath: string): Promise<UploadRow | null> {
    const rows = (await this.ds.query(
      `SELECT object_path, deployment_id, tenant_id, expires_at, uploaded_at, created_at FROM ${T} WHERE tenant_id = $1 AND deployment_id = $2 AND object_path = $3`,
      [scope.tenant_id, deploymentId, objectPath],
    )) as UploadRow[];
    return rows[0] ?? null;
  }

  /** Stores the bytes (a later PUT before use replaces them); false when the path is unknown or expired. */
  async store(objectPath: string, data: Buffer): Promise<boolean> {
    const rows = (await this.ds.query(`UPDATE ${T} SET data = $1, uploaded_at = now() WHERE object_path = $2 AND expires_at > now() RETURNING object_path`, [data, objectPath])) as unknown[][];
    return (rows[0] ?? []).length > 0;
  }

  async data(objectPath: string): Promise<Buffer | null> {
    const rows = (await this.ds.query(`SELECT data FROM ${T} WHERE object_path = $1`, [objectPath])) as { data: Buffer | null }[];
    return rows[0]?.data ?? null;
  }
}
