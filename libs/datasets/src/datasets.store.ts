import { DataSource, type EntityManager } from 'typeorm';
import { toEpochMicros } from '@th/contracts';
import { conflict, notFound } from '@th/platform';
import type { AttachmentMap } from './attachments';

export interface DatasetRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  data_type: string;
  inputs_schema_definition: Record<string, unknown> | null;
  outputs_schema_definition: Record<string, unknown> | null;
  externally_managed: boolean;
  created_by_upload: boolean;
  extra: Record<string, unknown> | null;
  share_token: string | null;
  current_version: number;
  created_at: Date;
  modified_at: Date;
  example_count: number;
  session_count: number;
  last_session_start_time: Date | null;
}

export interface ExampleRow {
  id: string;
  dataset_id: string;
  tenant_id: string;
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown> | null;
  metadata: Record<string, unknown> | null;
  splits: string[];
  source_run_id: string | null;
  created_at: Date;
  modified_at: Date;
  /** {name: {blob_id, mime_type}}; null or absent when the example has no attachments. */
  attachments?: AttachmentMap | null;
}

export interface NewVersion {
  version: number;
  asOf: Date;
}

export const EXAMPLE_COLUMNS = 'e.id, e.dataset_id, e.tenant_id, e.inputs, e.outputs, e.metadata, e.splits, e.source_run_id, e.created_at, e.modified_at, e.attachments';

/** The SQL shared by the datasets and examples services: one place that knows the tables and the version rules. */
export class DatasetsStore {
  private projectsTable: Promise<boolean> | undefined;

  constructor(readonly ds: DataSource) {}

  /** Runs `fn` in the caller's transaction when given one, else in a new transaction. */
  inTx<T>(manager: EntityManager | undefined, fn: (m: EntityManager) => Promise<T>): Promise<T> {
    return manager ? fn(manager) : this.ds.transaction(fn);
  }

  /** Experiments are tracing projects (query schema) whose reference_dataset_id names the dataset. */
  private hasProjects(): Promise<boolean> {
    this.projectsTable ??= this.ds
      .query(`SELECT to_regclass('"query"."projects"') IS NOT NULL AS ok`)
      .then((r: { ok: boolean }[]) => r[0]?.ok === true);
    return this.projectsTable;
  }

  /** SELECT of datasets with example_count, session_count and last_session_start_time computed now. */
  async datasetSelect(where: string): Promise<string> {
    const sessions = (await this.hasProjects())
      ? `LEFT JOIN LATERAL (SELECT count(*)::int AS session_count, max(p.start_time) AS last_session_start_time
           FROM "query"."projects" p WHERE p.tenant_id = d.tenant_id AND p.reference_dataset_id = d.id) s ON true`
      : `CROSS JOIN (SELECT 0 AS session_count, NULL::timestamptz AS last_session_start_time) s`;
    return `SELECT * FROM (SELECT d.*, (SELECT count(*)::int FROM "datasets"."examples" e WHERE e.tenant_id = d.tenant_id AND e.dataset_id = d.id AND e.valid_to IS NULL) AS example_count,
              s.session_count, s.last_session_start_time
            FROM "datasets"."datasets" d ${sessions} WHERE ${where}) x`;
  }

  async findDataset(m: EntityManager | DataSource, tenantId: string, id: string): Promise<DatasetRow | null> {
    const rows = (await m.query(await this.datasetSelect('d.tenant_id = $1 AND d.id = $2'), [tenantId, id])) as DatasetRow[];
    return rows[0] ?? null;
  }

  async getDataset(m: EntityManager | DataSource, tenantId: string, id: string): Promise<DatasetRow> {
    const d = await this.findDataset(m, tenantId, id);
    if (!d) throw notFound(`Dataset ${id}`);
    return d;
  }

  /**
   * Locks the dataset row and makes its next version (as_of strictly after the previous one, at millisecond
   * precision so an ISO timestamp read back names it exactly). 404 when the dataset is not in the workspace.
   */
  async nextVersion(m: EntityManager, tenantId: string, datasetId: string): Promise<NewVersion> {
    const locked = (await m.query(`SELECT current_version FROM "datasets"."datasets" WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [datasetId, tenantId])) as {
      current_version: number;
    }[];
    if (locked.length === 0) throw notFound(`Dataset ${datasetId}`);
    const version = locked[0].current_version + 1;
    const rows = (await m.query(
      `WITH t AS (SELECT greatest(date_trunc('milliseconds', clock_timestamp()),
                    (SELECT max(as_of) FROM "datasets"."dataset_versions" WHERE tenant_id = $3 AND dataset_id = $1) + interval '1 millisecond') AS as_of)
       INSERT INTO "datasets"."dataset_versions" (tenant_id, dataset_id, version, as_of) SELECT $3, $1, $2, t.as_of FROM t RETURNING as_of`,
      [datasetId, version, tenantId],
    )) as { as_of: Date }[];
    const asOf = rows[0].as_of;
    await m.query(`UPDATE "datasets"."datasets" SET current_version = $2, modified_at = $3 WHERE id = $1 AND tenant_id = $4`, [datasetId, version, asOf, tenantId]);
    return { version, asOf };
  }

  /**
   * The version named by `asOf`: `latest` or absent → the current one; an ISO timestamp → the version current at
   * that time (-1 before the dataset existed); anything else → a version tag (404 when unknown).
   */
  async resolveVersion(m: EntityManager | DataSource, dataset: Pick<DatasetRow, 'id' | 'tenant_id' | 'current_version'>, asOf: string | null | undefined): Promise<number> {
    if (asOf == null || asOf === 'latest') return dataset.current_version;
    if (/^\d{4}-\d{2}-\d{2}/.test(asOf) && toEpochMicros(asOf) !== null) {
      const micros = toEpochMicros(asOf) as number;
      const rows = (await m.query(
        `SELECT max(version) AS v FROM "datasets"."dataset_versions" WHERE tenant_id = $3 AND dataset_id = $1 AND as_of <= to_timestamp($2::double precision / 1000000)`,
        [dataset.id, micros, dataset.tenant_id],
      )) as { v: number | null }[];
      return rows[0]?.v ?? -1;
    }
    const rows = (await m.query(`SELECT version FROM "datasets"."dataset_version_tags" WHERE tenant_id = $1 AND dataset_id = $2 AND tag = $3`, [
      dataset.tenant_id,
      dataset.id,
      asOf,
    ])) as { version: number }[];
    if (rows.length === 0) throw notFound(`Dataset version tag "${asOf}"`);
    return rows[0].version;
  }

  async versionAsOf(m: EntityManager | DataSource, dataset: Pick<DatasetRow, 'id' | 'tenant_id'>, version: number): Promise<{ as_of: Date; tags: string[] } | null> {
    const rows = (await m.query(
      `SELECT v.as_of, coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM "datasets"."dataset_version_tags" t
                                 WHERE t.tenant_id = v.tenant_id AND t.dataset_id = v.dataset_id AND t.version = v.version), '{}') AS tags
       FROM "datasets"."dataset_versions" v WHERE v.tenant_id = $1 AND v.dataset_id = $2 AND v.version = $3`,
      [dataset.tenant_id, dataset.id, version],
    )) as { as_of: Date; tags: string[] }[];
    return rows[0] ?? null;
  }

  /** Inserts example states written by `version` (one statement per 2,000 rows). */
  async insertExampleRows(m: EntityManager, version: NewVersion, rows: ExampleRow[]): Promise<void> {
    for (let i = 0; i < rows.length; i += 2000) {
      const chunk = rows.slice(i, i + 2000).map((r) => ({
        id: r.id,
        dataset_id: r.dataset_id,
        tenant_id: r.tenant_id,
        inputs: r.inputs,
        outputs: r.outputs,
        metadata: r.metadata,
        splits: r.splits,
        source_run_id: r.source_run_id,
        created_at: r.created_at.toISOString(),
        attachments: r.attachments ?? null,
      }));
      try {
        await m.query(
          `INSERT INTO "datasets"."examples" (id, dataset_id, tenant_id, valid_from, valid_to, inputs, outputs, metadata, splits, source_run_id, created_at, modified_at, attachments)
           SELECT (x->>'id')::uuid, (x->>'dataset_id')::uuid, (x->>'tenant_id')::uuid, $2, NULL, x->'inputs',
                  CASE WHEN jsonb_typeof(x->'outputs') = 'object' THEN x->'outputs' END,
                  CASE WHEN jsonb_typeof(x->'metadata') = 'object' THEN x->'metadata' END,
                  ARRAY(SELECT jsonb_array_elements_text(x->'splits')), (x->>'source_run_id')::uuid, (x->>'created_at')::timestamptz, $3,
                  CASE WHEN jsonb_typeof(x->'attachments') = 'object' THEN x->'attachments' END
           FROM jsonb_array_elements($1::jsonb) AS x`,
          [JSON.stringify(chunk), version.version, version.asOf],
        );
      } catch (err) {
        if ((err as { code?: string }).code === '23505') throw conflict('An example with one of these ids already exists');
        throw err;
      }
    }
  }

  /** Ends the current state of these examples at `version` (they are replaced or deleted by it). */
  async closeExampleRows(m: EntityManager, tenantId: string, datasetId: string, ids: string[], version: number): Promise<void> {
    if (ids.length === 0) return;
    await m.query(`UPDATE "datasets"."examples" SET valid_to = $3 WHERE tenant_id = $4 AND dataset_id = $1 AND id = ANY($2::uuid[]) AND valid_to IS NULL`, [
      datasetId,
      ids,
      version,
      tenantId,
    ]);
  }

  /** Current states of the given examples in the workspace, locked for update. */
  async currentExamples(m: EntityManager, tenantId: string, ids: string[], lock: boolean): Promise<ExampleRow[]> {
    if (ids.length === 0) return [];
    return (await m.query(
      `SELECT ${EXAMPLE_COLUMNS} FROM "datasets"."examples" e WHERE e.tenant_id = $1 AND e.id = ANY($2::uuid[]) AND e.valid_to IS NULL${lock ? ' FOR UPDATE' : ''}`,
      [tenantId, ids],
    )) as ExampleRow[];
  }
}
