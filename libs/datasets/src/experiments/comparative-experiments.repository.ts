import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DATASETS_DATA_SOURCE } from '../datasets.module';

export interface ComparativeExperimentRow {
  tenant_id: string;
  id: string;
  name: string | null;
  description: string | null;
  reference_dataset_id: string;
  experiment_ids: string[];
  extra: Record<string, unknown> | null;
  created_at: Date;
  modified_at: Date;
}

const COLUMNS = `"tenant_id", "id", "name", "description", "reference_dataset_id", "experiment_ids", "extra", "created_at", "modified_at"`;

/** The only code that speaks SQL to comparative_experiments; every query names the workspace. */
@Injectable()
export class ComparativeExperimentsRepository {
  constructor(@Inject(DATASETS_DATA_SOURCE) private readonly ds: DataSource) {}

  /** False when the workspace already has a comparative experiment with this id. */
  async insert(r: ComparativeExperimentRow): Promise<boolean> {
    const rows: unknown[] = await this.ds.query(
      `INSERT INTO "datasets"."comparative_experiments" (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       ON CONFLICT ("tenant_id", "id") DO NOTHING RETURNING "id"`,
      [r.tenant_id, r.id, r.name, r.description, r.reference_dataset_id, r.experiment_ids, r.extra === null ? null : JSON.stringify(r.extra), r.created_at, r.modified_at],
    );
    return rows.length === 1;
  }

  async listByDataset(tenantId: string, datasetId: string, q: { name_contains?: string; limit: number; offset: number }): Promise<ComparativeExperimentRow[]> {
    return this.ds.query(
      `SELECT ${COLUMNS} FROM "datasets"."comparative_experiments"
       WHERE "tenant_id" = $1 AND "reference_dataset_id" = $2 AND ($3::text IS NULL OR strpos(lower(coalesce("name", '')), lower($3)) > 0)
       ORDER BY "created_at" DESC, "id" LIMIT $4 OFFSET $5`,
      [tenantId, datasetId, q.name_contains ?? null, q.limit, q.offset],
    );
  }

  async findById(tenantId: string, id: string): Promise<ComparativeExperimentRow | null> {
    const rows: ComparativeExperimentRow[] = await this.ds.query(`SELECT ${COLUMNS} FROM "datasets"."comparative_experiments" WHERE "tenant_id" = $1 AND "id" = $2`, [tenantId, id]);
    return rows[0] ?? null;
  }

  async delete(tenantId: string, id: string): Promise<boolean> {
    const [, affected] = (await this.ds.query(`DELETE FROM "datasets"."comparative_experiments" WHERE "tenant_id" = $1 AND "id" = $2`, [tenantId, id])) as [unknown, number];
    return affected > 0;
  }
}
