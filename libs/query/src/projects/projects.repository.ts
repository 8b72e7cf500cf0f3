import type { TenantScope } from '@th/contracts';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource, In, type Repository } from 'typeorm';
import { ProjectEntity } from './project.entity';

/** The only code that speaks SQL to the projects table; every call is bound to a tenant. */
@Injectable()
export class ProjectsRepository {
  private readonly repo: Repository<ProjectEntity>;
  constructor(private readonly ds: DataSource) {
    this.repo = ds.getRepository(ProjectEntity);
  }

  findById(scope: TenantScope, id: string): Promise<ProjectEntity | null> {
    return this.repo.findOne({ where: { tenant_id: scope.tenant_id, id } });
  }

  findByIds(scope: TenantScope, ids: string[]): Promise<ProjectEntity[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.repo.find({ where: { tenant_id: scope.tenant_id, id: In(ids) } });
  }

  findByName(scope: TenantScope, name: string): Promise<ProjectEntity | null> {
    return this.repo.findOne({ where: { tenant_id: scope.tenant_id, name } });
  }

  async list(
    scope: TenantScope,
    f: { ids?: string[]; name?: string; nameContains?: string; referenceDatasets?: string[]; referenceFree?: boolean; metadata?: Record<string, unknown> },
    page: { offset: number; limit: number },
  ): Promise<ProjectEntity[]> {
    const qb = this.repo.createQueryBuilder('p').where('p.tenant_id = :tenant', { tenant: scope.tenant_id });
    if (f.ids?.length) qb.andWhere('p.id IN (:...ids)', { ids: f.ids });
    if (f.name !== undefined) qb.andWhere('p.name = :name', { name: f.name });
    if (f.nameContains) qb.andWhere(`p.name ILIKE :nc ESCAPE '\\'`, { nc: `%${f.nameContains.replace(/[\\%_]/g, (c) => `\\${c}`)}%` });
    if (f.referenceDatasets?.length) qb.andWhere('p.reference_dataset_id IN (:...rds)', { rds: f.referenceDatasets });
    if (f.referenceFree === true) qb.andWhere('p.reference_dataset_id IS NULL');
    if (f.referenceFree === false) qb.andWhere('p.reference_dataset_id IS NOT NULL');
    if (f.metadata) qb.andWhere(`p.extra -> 'metadata' @> :md::jsonb`, { md: JSON.stringify(f.metadata) });
    return qb.orderBy('p.start_time', 'DESC').addOrderBy('p.id', 'DESC').offset(page.offset).limit(page.limit).getMany();
  }

  /** Inserts unless the name or the id is taken in the workspace; returns null then. */
  async insert(project: ProjectEntity): Promise<ProjectEntity | null> {
    const rows = (await this.ds.query(
      `INSERT INTO "query"."projects" (id, tenant_id, name, description, extra, start_time, end_time, reference_dataset_id, default_dataset_id, trace_tier, created_at, modified_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12) ON CONFLICT DO NOTHING RETURNING id`,
      [
        project.id, project.tenant_id, project.name, project.description, project.extra === null ? null : JSON.stringify(project.extra),
        project.start_time, project.end_time, project.reference_dataset_id, project.default_dataset_id, project.trace_tier,
        project.created_at, project.modified_at,
      ],
    )) as { id: string }[];
    return rows.length > 0 ? project : null;
  }

  /** Ids of the named projects, creating those that do not exist (concurrent callers agree). */
  async ensureNames(scope: TenantScope, names: string[]): Promise<Record<string, string>> {
    if (names.length === 0) return {};
    const now = new Date();
    const values: unknown[] = [];
    const tuples = names.map((n, i) => {
      values.push(randomUUID(), scope.tenant_id, n, now);
      return `($${i * 4 + 1}, $${i * 4 + 2}, $${i * 4 + 3}, $${i * 4 + 4}, $${i * 4 + 4}, $${i * 4 + 4})`;
    });
    await this.ds.query(
      `INSERT INTO "query"."projects" (id, tenant_id, name, start_time, created_at, modified_at) VALUES ${tuples.join(',')}
       ON CONFLICT (tenant_id, name) DO NOTHING`,
      values,
    );
    const rows = await this.repo.find({ where: { tenant_id: scope.tenant_id, name: In(names) }, select: { id: true, name: true } });
    return Object.fromEntries(rows.map((r) => [r.name, r.id]));
  }

  /** An experiment's number on its reference dataset: 1 for the first created, by (created_at, id). */
  async testRunNumber(scope: TenantScope, p: ProjectEntity): Promise<number | null> {
    if (!p.reference_dataset_id) return null;
    const rows = (await this.ds.query(
      `SELECT count(*)::int AS n FROM "query"."projects"
       WHERE tenant_id = $1 AND reference_dataset_id = $2 AND (created_at, id) <= ($3, $4)`,
      [scope.tenant_id, p.reference_dataset_id, p.created_at, p.id],
    )) as { n: number }[];
    return rows[0]?.n ?? null;
  }

  async update(scope: TenantScope, id: string, patch: Partial<ProjectEntity>): Promise<void> {
    await this.repo.update({ tenant_id: scope.tenant_id, id }, patch as Parameters<Repository<ProjectEntity>['update']>[1]);
  }

  async delete(scope: TenantScope, id: string): Promise<boolean> {
    const r = await this.repo.delete({ tenant_id: scope.tenant_id, id });
    return (r.affected ?? 0) > 0;
  }
}
