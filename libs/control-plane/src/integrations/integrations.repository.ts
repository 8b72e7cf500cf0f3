import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import type { TenantScope } from '@th/contracts';
import type { SealedValue } from '../secrets.cipher';

export interface IntegrationRow {
  id: string;
  tenant_id: string;
  kind: string;
  webhook_secret: SealedValue;
  created_at: Date;
}

const T = `"control_plane"."integrations"`;

export class IntegrationsRepository {
  constructor(private readonly ds: DataSource) {}

  /** The tenant's git host integration, created on first use (concurrent callers agree on one). */
  async ensure(scope: TenantScope, sealedSecret: SealedValue): Promise<IntegrationRow> {
    await this.ds.query(
      `INSERT INTO ${T} (id, tenant_id, kind, webhook_secret, created_at) VALUES ($1,$2,'git_host',$3,now()) ON CONFLICT (tenant_id) DO NOTHING`,
      [randomUUID(), scope.tenant_id, JSON.stringify(sealedSecret)],
    );
    const rows = (await this.ds.query(`SELECT * FROM ${T} WHERE tenant_id = $1`, [scope.tenant_id])) as IntegrationRow[];
    return rows[0];
  }

  async find(scope: TenantScope, id: string): Promise<IntegrationRow | null> {
    const rows = (await this.ds.query(`SELECT * FROM ${T} WHERE tenant_id = $1 AND id = $2`, [scope.tenant_id, id])) as IntegrationRow[];
    return rows[0] ?? null;
  }

  async findById(id: string): Promise<IntegrationRow | null> {
    const rows = (await this.ds.query(`SELECT * FROM ${T} WHERE id = $1`, [id])) as IntegrationRow[];
    return rows[0] ?? null;
  }

  /** Deployments built on push from this integration's repository and ref. */
  async pushTargets(integrationId: string, repoUrls: string[], branch: string): Promise<{ id: string; tenant_id: string }[]> {
    return (await this.ds.query(
      `SELECT id, tenant_id FROM "control_plane"."deployments"
       WHERE source = 'git_host' AND source_config->>'integration_id' = $1 AND (source_config->>'build_on_push')::boolean IS TRUE
         AND source_config->>'repo_url' = ANY($2) AND source_revision_config->>'repo_ref' = $3 AND status IN ('READY','UNUSED')`,
      [integrationId, repoUrls, branch],
    )) as { id: string; tenant_id: string }[];
  }
}
