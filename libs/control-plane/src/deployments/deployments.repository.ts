import { DataSource, type EntityManager } from 'typeorm';
import type {
  DeploymentSource,
  DeploymentStatus,
  ResourceSpec,
  RevisionStatus,
  RevisionTransition,
  SecretReference,
  SourceConfig,
  SourceRevisionConfig,
  TenantScope,
} from '@th/contracts';
import type { SealedSecret, SealedValue } from '../secrets.cipher';

/** Where a driver keeps what a deployment holds at run time (URL, ports, database). */
export interface DeploymentRuntime {
  /** Before deployments had roles: the admin's URL, dropped when the role is made. */
  database_url?: string;
  database_name?: string;
  /** The role that owns the database (local driver) and its password, sealed like the deployment's secrets. */
  database_role?: string;
  database_password?: SealedValue;
  url?: string;
  front_port?: number;
  /** Revision id → the server serving it (local driver): its unix socket (sandboxed) or loopback port (unsafe-none). */
  servers?: Record<string, { port?: number; socket?: string; pid: number }>;
  message?: string;
}

export interface DeploymentRow {
  id: string;
  tenant_id: string;
  name: string;
  source: DeploymentSource;
  source_config: SourceConfig;
  source_revision_config: SourceRevisionConfig;
  secrets: SealedSecret[];
  secret_references: SecretReference[] | null;
  status: DeploymentStatus;
  latest_revision_id: string | null;
  active_revision_id: string | null;
  image_version: string | null;
  runtime: DeploymentRuntime;
  created_at: Date;
  updated_at: Date;
}

/** What a revision needs to be built and run, frozen when it is created. */
export interface RevisionBuild {
  install_command: string | null;
  build_command: string | null;
  repo_url: string | null;
  listener_id: string | null;
  k8s_namespace: string | null;
  secret_references: SecretReference[] | null;
}

export interface RevisionRow {
  id: string;
  deployment_id: string;
  tenant_id: string;
  seq: string;
  status: RevisionStatus;
  status_message: string;
  status_history: RevisionTransition[];
  source_revision_config: SourceRevisionConfig;
  resource_spec: ResourceSpec | null;
  build: RevisionBuild;
  secrets: SealedSecret[];
  created_at: Date;
  updated_at: Date;
}

const DEP = `"control_plane"."deployments"`;
const REV = `"control_plane"."revisions"`;
export const UNFINISHED: RevisionStatus[] = ['QUEUED', 'BUILDING', 'DEPLOYING'];

type Db = Pick<EntityManager, 'query'>;
const j = (v: unknown) => (v === null || v === undefined ? null : JSON.stringify(v));

/** The only code that speaks SQL to deployments and revisions; tenant-facing calls are bound to a tenant. */
export class DeploymentsRepository {
  constructor(private readonly ds: DataSource) {}

  manager(): Db {
    return this.ds.manager;
  }

  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T> {
    return this.ds.transaction((em) => fn(em));
  }

  async insertDeployment(tx: Db, d: DeploymentRow): Promise<boolean> {
    const rows = (await tx.query(
      `INSERT INTO ${DEP} (id, tenant_id, name, source, source_config, source_revision_config, secrets, secret_references, status,
         latest_revision_id, active_revision_id, image_version, runtime, created_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15) ON CONFLICT (tenant_id, name) DO NOTHING RETURNING id`,
      [d.id, d.tenant_id, d.name, d.source, j(d.source_config), j(d.source_revision_config), j(d.secrets), j(d.secret_references), d.status,
        d.latest_revision_id, d.active_revision_id, d.image_version, j(d.runtime), d.created_at, d.updated_at],
    )) as unknown[];
    return rows.length > 0;
  }

  async updateDeployment(tx: Db, id: string, patch: Partial<Omit<DeploymentRow, 'id' | 'tenant_id' | 'created_at'>>): Promise<void> {
    const sets: string[] = [];
    const vals: unknown[] = [];
    for (const [k, v] of Object.entries(patch)) {
      vals.push(['source_config', 'source_revision_config', 'secrets', 'secret_references', 'runtime'].includes(k) ? j(v) : v);
      sets.push(`"${k}" = $${vals.length}`);
    }
    if (!('updated_at' in patch)) {
      vals.push(new Date());
      sets.push(`"updated_at" = $${vals.length}`);
    }
    vals.push(id);
    await tx.query(`UPDATE ${DEP} SET ${sets.join(', ')} WHERE id = $${vals.length}`, vals);
  }

  /** Moves the status only from one of `from` (the deployment state machine); false when it was elsewhere. */
  async moveStatus(tx: Db, id: string, from: DeploymentStatus[], to: DeploymentStatus, extra: Partial<DeploymentRow> = {}): Promise<boolean> {
    const rows = (await tx.query(`UPDATE ${DEP} SET status = $1, updated_at = now() WHERE id = $2 AND status = ANY($3) RETURNING id`, [to, id, from])) as unknown[];
    const moved = (Array.isArray(rows[0]) ? (rows[0] as unknown[]) : rows).length > 0;
    if (moved && Object.keys(extra).length > 0) await this.updateDeployment(tx, id, extra);
    return moved;
  }

  async findDeployment(scope: TenantScope, id: string, tx: Db = this.ds, lock = false): Promise<DeploymentRow | null> {
    const rows = (await tx.query(`SELECT * FROM ${DEP} WHERE tenant_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [scope.tenant_id, id])) as DeploymentRow[];
    return rows[0] ?? null;
  }

  /** For the rollout worker, which acts for every tenant. */
  async findDeploymentById(id: string, tx: Db = this.ds, lock = false): Promise<DeploymentRow | null> {
    const rows = (await tx.query(`SELECT * FROM ${DEP} WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id])) as DeploymentRow[];
    return rows[0] ?? null;
  }

  async listDeployments(scope: TenantScope, f: { name?: string; nameContains?: string; status?: DeploymentStatus }, page: { offset: number; limit: number }): Promise<{ rows: DeploymentRow[]; total: number }> {
    const where = ['tenant_id = $1'];
    const vals: unknown[] = [scope.tenant_id];
    if (f.name !== undefined) where.push(`name = $${vals.push(f.name)}`);
    if (f.nameContains !== undefined) where.push(`name ILIKE $${vals.push(`%${f.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)} ESCAPE '\\'`);
    if (f.status !== undefined) where.push(`status = $${vals.push(f.status)}`);
    const [{ n }] = (await this.ds.query(`SELECT count(*)::int AS n FROM ${DEP} WHERE ${where.join(' AND ')}`, vals)) as { n: number }[];
    const rows = (await this.ds.query(
      `SELECT * FROM ${DEP} WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC OFFSET $${vals.length + 1} LIMIT $${vals.length + 2}`,
      [...vals, page.offset, page.limit],
    )) as DeploymentRow[];
    return { rows, total: n };
  }

  async deleteDeployment(id: string): Promise<void> {
    await this.ds.query(`DELETE FROM ${DEP} WHERE id = $1`, [id]);
  }

  /** Deployments the rollout worker has something to do for. */
  async deploymentsNeedingWork(): Promise<string[]> {
    const rows = (await this.ds.query(
      `SELECT d.id FROM ${DEP} d WHERE d.status IN ('AWAITING_DATABASE','AWAITING_DELETE')
       OR EXISTS (SELECT 1 FROM ${REV} r WHERE r.deployment_id = d.id AND r.status IN ('QUEUED','BUILDING','DEPLOYING'))
       ORDER BY d.updated_at`,
    )) as { id: string }[];
    return rows.map((r) => r.id);
  }

  /** Deployments with a serving revision (the drivers bring their servers back after a restart). */
  async deploymentsServing(): Promise<DeploymentRow[]> {
    return (await this.ds.query(`SELECT * FROM ${DEP} WHERE active_revision_id IS NOT NULL AND status IN ('READY','UNUSED')`)) as DeploymentRow[];
  }

  async insertRevision(tx: Db, r: Omit<RevisionRow, 'seq'>): Promise<void> {
    await tx.query(
      `INSERT INTO ${REV} (id, deployment_id, tenant_id, status, status_message, status_history, source_revision_config, resource_spec, build, secrets, created_at, updated_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
      [r.id, r.deployment_id, r.tenant_id, r.status, r.status_message, j(r.status_history), j(r.source_revision_config), j(r.resource_spec), j(r.build), j(r.secrets), r.created_at, r.updated_at],
    );
  }

  async findRevision(scope: TenantScope, deploymentId: string, id: string): Promise<RevisionRow | null> {
    const rows = (await this.ds.query(`SELECT * FROM ${REV} WHERE tenant_id = $1 AND deployment_id = $2 AND id = $3`, [scope.tenant_id, deploymentId, id])) as RevisionRow[];
    return rows[0] ?? null;
  }

  async findRevisionById(id: string, tx: Db = this.ds): Promise<RevisionRow | null> {
    const rows = (await tx.query(`SELECT * FROM ${REV} WHERE id = $1`, [id])) as RevisionRow[];
    return rows[0] ?? null;
  }

  async listRevisions(scope: TenantScope, deploymentId: string, f: { status?: RevisionStatus }, page: { offset: number; limit: number }): Promise<{ rows: RevisionRow[]; total: number }> {
    const vals: unknown[] = [scope.tenant_id, deploymentId];
    let where = 'tenant_id = $1 AND deployment_id = $2';
    if (f.status) where += ` AND status = $${vals.push(f.status)}`;
    const [{ n }] = (await this.ds.query(`SELECT count(*)::int AS n FROM ${REV} WHERE ${where}`, vals)) as { n: number }[];
    const rows = (await this.ds.query(`SELECT * FROM ${REV} WHERE ${where} ORDER BY seq DESC OFFSET $${vals.length + 1} LIMIT $${vals.length + 2}`, [...vals, page.offset, page.limit])) as RevisionRow[];
    return { rows, total: n };
  }

  /** Unfinished revisions of a deployment, oldest first. */
  async unfinishedRevisions(deploymentId: string): Promise<RevisionRow[]> {
    return (await this.ds.query(`SELECT * FROM ${REV} WHERE deployment_id = $1 AND status = ANY($2) ORDER BY seq`, [deploymentId, UNFINISHED])) as RevisionRow[];
  }

  /**
   * Records a transition (time and message appended to the history). Moves only from one of `from`,
   * so a revision superseded meanwhile is never moved back; returns false then.
   */
  async transition(tx: Db, id: string, from: RevisionStatus[], to: RevisionStatus, message: string, extra: { source_revision_config?: SourceRevisionConfig } = {}): Promise<boolean> {
    const entry: RevisionTransition = { status: to, at: new Date().toISOString(), message };
    const rows = (await tx.query(
      `UPDATE ${REV} SET status = $1, status_message = $2, status_history = status_history || $3::jsonb, updated_at = now()
         ${extra.source_revision_config ? ', source_revision_config = $6' : ''}
       WHERE id = $4 AND status = ANY($5) RETURNING id`,
      [to, message, JSON.stringify([entry]), id, from, ...(extra.source_revision_config ? [JSON.stringify(extra.source_revision_config)] : [])],
    )) as unknown[];
    return (Array.isArray(rows[0]) ? (rows[0] as unknown[]) : rows).length > 0;
  }
}

export type { SealedValue };
