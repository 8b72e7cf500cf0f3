import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { Dataset, DatasetCreate, DatasetListQuery, DatasetShare, DatasetUpdate, DatasetVersion, Identity } from '@th/contracts';
import { AuditPublisher } from '@th/audit-client';
import { ValidationFailed, conflict, notFound, parseClientJson } from '@th/platform';
import { DatasetsStore, EXAMPLE_COLUMNS, type DatasetRow, type ExampleRow } from './datasets.store';
import { presentDataset } from './present';
import { ExampleSchemaValidator } from './schema-validator';

function parseJsonObject(text: string | undefined, loc: (string | number)[]): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  try {
    const v = parseClientJson(text);
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new ValidationFailed([{ loc, msg: 'must be a JSON object', type: 'json_invalid' }]);
}
export { parseJsonObject };

/** Datasets: metadata, schemas, versions and tags, sharing. Examples are in ExamplesService. */
@Injectable()
export class DatasetsService {
  constructor(
    private readonly store: DatasetsStore,
    private readonly validator: ExampleSchemaValidator,
    private readonly audit: AuditPublisher,
  ) {}

  /**
   * Creates a dataset (409 when the workspace already has one of that name or the id is taken).
   * With `opts.manager` the insert joins the caller's transaction and the caller records the audit event
   * (an experiment or CSV upload); otherwise it is tracked here.
   */
  create(identity: Identity, body: DatasetCreate, opts: { createdByUpload?: boolean; manager?: EntityManager } = {}): Promise<Dataset> {
    if (opts.manager) return this.applyCreate(identity, body, opts.createdByUpload ?? false, opts.manager);
    return this.audit.track(
      { identity, resources: body.id ? [{ type: 'dataset', id: body.id }] : [] },
      () => this.store.inTx(undefined, (m) => this.applyCreate(identity, body, opts.createdByUpload ?? false, m)),
      (d) => [{ type: 'dataset', id: d.id }],
    );
  }

  private async applyCreate(identity: Identity, body: DatasetCreate, createdByUpload: boolean, m: EntityManager): Promise<Dataset> {
    this.validator.checkSchema(body.inputs_schema_definition, ['body', 'inputs_schema_definition']);
    this.validator.checkSchema(body.outputs_schema_definition, ['body', 'outputs_schema_definition']);
    const id = body.id ?? randomUUID();
    const createdAt = body.created_at ? new Date(body.created_at) : new Date();
    const rows = (await m.query(
      `INSERT INTO "datasets"."datasets" (id, tenant_id, name, description, data_type, inputs_schema_definition, outputs_schema_definition,
         externally_managed, created_by_upload, extra, current_version, created_at, modified_at)
       VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,0,$11,$11) ON CONFLICT DO NOTHING RETURNING id`,
      [
        id, identity.tenant_id, body.name, body.description ?? null, body.data_type ?? 'kv',
        body.inputs_schema_definition == null ? null : JSON.stringify(body.inputs_schema_definition),
        body.outputs_schema_definition == null ? null : JSON.stringify(body.outputs_schema_definition),
        createdByUpload || (body.externally_managed ?? false), createdByUpload, body.extra == null ? null : JSON.stringify(body.extra), createdAt,
      ],
    )) as { id: string }[];
    if (rows.length === 0) {
      const byName = (await m.query(`SELECT 1 FROM "datasets"."datasets" WHERE tenant_id = $1 AND name = $2`, [identity.tenant_id, body.name])) as unknown[];
      throw conflict(byName.length > 0 ? `Dataset with name "${body.name}" already exists` : `Dataset with id ${id} already exists`);
    }
    await m.query(`INSERT INTO "datasets"."dataset_versions" (tenant_id, dataset_id, version, as_of) VALUES ($1, $2, 0, $3)`, [identity.tenant_id, id, createdAt]);
    return presentDataset(await this.store.getDataset(m, identity.tenant_id, id));
  }

  /** 404 when absent or in another workspace. */
  async get(identity: Identity, id: string): Promise<Dataset> {
    return presentDataset(await this.store.getDataset(this.store.ds, identity.tenant_id, id));
  }

  /** The dataset row (with its current version); for the examples service and experiment code. */
  row(identity: Identity, id: string, manager?: EntityManager): Promise<DatasetRow> {
    return this.store.getDataset(manager ?? this.store.ds, identity.tenant_id, id);
  }

  async findByName(identity: Identity, name: string, manager?: EntityManager): Promise<Dataset | null> {
    const rows = (await (manager ?? this.store.ds).query(await this.store.datasetSelect('d.tenant_id = $1 AND d.name = $2'), [identity.tenant_id, name])) as DatasetRow[];
    return rows[0] ? presentDataset(rows[0]) : null;
  }

  async list(identity: Identity, q: DatasetListQuery): Promise<Dataset[]> {
    const metadata = parseJsonObject(q.metadata, ['query', 'metadata']);
    const where: string[] = ['d.tenant_id = $1'];
    const params: unknown[] = [identity.tenant_id];
    const add = (sql: (p: string) => string, v: unknown) => {
      params.push(v);
      where.push(sql(`$${params.length}`));
    };
    if (q.id?.length) add((p) => `d.id = ANY(${p}::uuid[])`, q.id);
    if (q.name !== undefined) add((p) => `d.name = ${p}`, q.name);
    if (q.name_contains) add((p) => `d.name ILIKE ${p} ESCAPE '\\'`, `%${q.name_contains.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    if (q.data_type?.length) add((p) => `d.data_type = ANY(${p}::text[])`, q.data_type);
    if (metadata) add((p) => `coalesce(d.extra -> 'metadata', '{}'::jsonb) @> ${p}::jsonb`, JSON.stringify(metadata));
    const sortKey = q.sort_by ?? 'created_at';
    const desc = q.sort_by_desc ?? sortKey !== 'name';
    const dir = desc ? 'DESC NULLS LAST' : 'ASC NULLS FIRST';
    params.push(q.offset, q.limit);
    const rows = (await this.store.ds.query(
      `${await this.store.datasetSelect(where.join(' AND '))} ORDER BY x.${sortKey} ${dir}, x.id ${desc ? 'DESC' : 'ASC'} OFFSET $${params.length - 1} LIMIT $${params.length}`,
      params,
    )) as DatasetRow[];
    return rows.map(presentDataset);
  }

  /** Tracked. A new schema must hold for every current example (422 naming the first ones that break it). */
  update(identity: Identity, id: string, body: DatasetUpdate): Promise<Dataset> {
    return this.audit.track({ identity, resources: [{ type: 'dataset', id }] }, () =>
      this.store.inTx(undefined, async (m) => {
        const locked = (await m.query(`SELECT id FROM "datasets"."datasets" WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [id, identity.tenant_id])) as unknown[];
        if (locked.length === 0) throw notFound(`Dataset ${id}`);
        const d = await this.store.getDataset(m, identity.tenant_id, id);
        const sets: string[] = [];
        const params: unknown[] = [id, identity.tenant_id];
        const set = (col: string, v: unknown) => {
          params.push(v);
          sets.push(`${col} = $${params.length}`);
        };
        if (body.name != null && body.name !== d.name) {
          const clash = (await m.query(`SELECT 1 FROM "datasets"."datasets" WHERE tenant_id = $1 AND name = $2`, [identity.tenant_id, body.name])) as unknown[];
          if (clash.length > 0) throw conflict(`Dataset with name "${body.name}" already exists`);
          set('name', body.name);
        }
        if (body.description != null) set('description', body.description);
        if (body.metadata != null) set('extra', JSON.stringify({ ...(d.extra ?? {}), metadata: body.metadata }));
        const inSchema = body.inputs_schema_definition !== undefined && body.inputs_schema_definition !== null ? body.inputs_schema_definition : undefined;
        const outSchema = body.outputs_schema_definition !== undefined && body.outputs_schema_definition !== null ? body.outputs_schema_definition : undefined;
        if (inSchema !== undefined || outSchema !== undefined) {
          this.validator.checkSchema(inSchema, ['body', 'inputs_schema_definition']);
          this.validator.checkSchema(outSchema, ['body', 'outputs_schema_definition']);
          const current = (await m.query(
            `SELECT ${EXAMPLE_COLUMNS} FROM "datasets"."examples" e WHERE e.tenant_id = $1 AND e.dataset_id = $2 AND e.valid_to IS NULL ORDER BY e.created_at, e.id`,
            [identity.tenant_id, id],
          )) as ExampleRow[];
          const errors = current.flatMap((e) => [
            ...(inSchema ? this.validator.errors(inSchema, e.inputs, ['body', 'inputs_schema_definition', 'examples', e.id, 'inputs']) : []),
            ...(outSchema ? this.validator.errors(outSchema, e.outputs ?? {}, ['body', 'outputs_schema_definition', 'examples', e.id, 'outputs']) : []),
          ]);
          if (errors.length > 0) throw new ValidationFailed(errors.slice(0, 20));
          if (inSchema) set('inputs_schema_definition', JSON.stringify(inSchema));
          if (outSchema) set('outputs_schema_definition', JSON.stringify(outSchema));
        }
        if (sets.length > 0) {
          sets.push('modified_at = greatest(modified_at, now())');
          await m.query(`UPDATE "datasets"."datasets" SET ${sets.join(', ')} WHERE id = $1 AND tenant_id = $2`, params);
        }
        return presentDataset(await this.store.getDataset(m, identity.tenant_id, id));
      }),
    );
  }

  /** Tracked. Its examples and versions go with it; experiments that referenced it stay. */
  delete(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ identity, resources: [{ type: 'dataset', id }] }, async () => {
      const [rows] = (await this.store.ds.query(`DELETE FROM "datasets"."datasets" WHERE id = $1 AND tenant_id = $2 RETURNING id`, [id, identity.tenant_id])) as [unknown[], number];
      if (rows.length === 0) throw notFound(`Dataset ${id}`);
    });
  }

  /** Tracked. All or nothing: 404 (and nothing deleted) when one of them is not in the workspace. */
  deleteMany(identity: Identity, ids: string[]): Promise<void> {
    const unique = [...new Set(ids)];
    return this.audit.track({ identity, resources: unique.map((id) => ({ type: 'dataset', id })) }, () =>
      this.store.inTx(undefined, async (m) => {
        const [rows] = (await m.query(`DELETE FROM "datasets"."datasets" WHERE id = ANY($1::uuid[]) AND tenant_id = $2 RETURNING id`, [unique, identity.tenant_id])) as [{ id: string }[], number];
        if (rows.length !== unique.length) {
          const found = new Set(rows.map((r) => r.id));
          throw notFound(`Dataset ${unique.find((id) => !found.has(id))}`);
        }
      }),
    );
  }

  async versions(identity: Identity, id: string, page: { offset: number; limit: number }): Promise<DatasetVersion[]> {
    await this.store.getDataset(this.store.ds, identity.tenant_id, id);
    const rows = (await this.store.ds.query(
      `SELECT v.as_of, coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM "datasets"."dataset_version_tags" t
                                 WHERE t.tenant_id = v.tenant_id AND t.dataset_id = v.dataset_id AND t.version = v.version), '{}') AS tags
       FROM "datasets"."dataset_versions" v WHERE v.tenant_id = $1 AND v.dataset_id = $2 ORDER BY v.version DESC OFFSET $3 LIMIT $4`,
      [identity.tenant_id, id, page.offset, page.limit],
    )) as { as_of: Date; tags: string[] }[];
    return rows.map((r) => ({ as_of: r.as_of.toISOString(), tags: r.tags }));
  }

  /** The version current at `as_of`, or the one carrying `tag` (exactly one of the two; none → the latest). */
  async version(identity: Identity, id: string, q: { as_of?: string; tag?: string }): Promise<DatasetVersion> {
    if (q.as_of !== undefined && q.tag !== undefined) throw new ValidationFailed([{ loc: ['query'], msg: 'give as_of or tag, not both', type: 'value_error' }]);
    const d = await this.store.getDataset(this.store.ds, identity.tenant_id, id);
    const v = await this.store.resolveVersion(this.store.ds, d, q.tag ?? q.as_of);
    const found = v < 0 ? null : await this.store.versionAsOf(this.store.ds, d, v);
    if (!found) throw notFound(`Version of dataset ${id} as of ${q.as_of ?? q.tag}`);
    return { as_of: found.as_of.toISOString(), tags: found.tags };
  }

  /** Tracked. Puts `tag` on the version current at `as_of` (moving it if another version had it). */
  updateTag(identity: Identity, id: string, body: { as_of: string; tag: string }): Promise<DatasetVersion> {
    return this.audit.track({ identity, resources: [{ type: 'dataset', id }] }, () =>
      this.store.inTx(undefined, async (m) => {
        if (body.tag === 'latest') throw new ValidationFailed([{ loc: ['body', 'tag'], msg: '"latest" is reserved', type: 'value_error' }]);
        const d = await this.store.getDataset(m, identity.tenant_id, id);
        const v = await this.store.resolveVersion(m, d, body.as_of);
        if (v < 0) throw notFound(`Version of dataset ${id} as of ${body.as_of}`);
        await m.query(
          `INSERT INTO "datasets"."dataset_version_tags" (tenant_id, dataset_id, tag, version) VALUES ($1, $2, $3, $4)
           ON CONFLICT (tenant_id, dataset_id, tag) DO UPDATE SET version = EXCLUDED.version`,
          [identity.tenant_id, id, body.tag, v],
        );
        const found = await this.store.versionAsOf(m, d, v);
        return { as_of: (found as { as_of: Date }).as_of.toISOString(), tags: (found as { tags: string[] }).tags };
      }),
    );
  }

  /** Tracked. Idempotent: a shared dataset keeps its token. */
  share(identity: Identity, id: string): Promise<DatasetShare> {
    return this.audit.track({ identity, resources: [{ type: 'dataset', id }] }, async () => {
      const rows = (await this.store.ds.query(
        `UPDATE "datasets"."datasets" SET share_token = coalesce(share_token, $3::uuid) WHERE id = $1 AND tenant_id = $2 RETURNING share_token`,
        [id, identity.tenant_id, randomUUID()],
      )) as [{ share_token: string }[], number];
      const row = rows[0][0];
      if (!row) throw notFound(`Dataset ${id}`);
      return { dataset_id: id, share_token: row.share_token };
    });
  }

  /** Tracked. The token stops working at once; sharing again makes a new one. */
  unshare(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ identity, resources: [{ type: 'dataset', id }] }, async () => {
      const rows = (await this.store.ds.query(`UPDATE "datasets"."datasets" SET share_token = NULL WHERE id = $1 AND tenant_id = $2 RETURNING id`, [id, identity.tenant_id])) as [
        unknown[],
        number,
      ];
      if (rows[0].length === 0) throw notFound(`Dataset ${id}`);
    });
  }

  async shareState(identity: Identity, id: string): Promise<DatasetShare | null> {
    const d = await this.store.getDataset(this.store.ds, identity.tenant_id, id);
    return d.share_token ? { dataset_id: id, share_token: d.share_token } : null;
  }

  /** Public read of a shared dataset: no workspace, only the token. 404 when the token is not (or no longer) valid. */
  async byShareToken(token: string): Promise<DatasetRow> {
    const rows = (await this.store.ds.query(await this.store.datasetSelect('d.share_token = $1'), [token])) as DatasetRow[];
    if (!rows[0]) throw notFound('Shared dataset');
    return rows[0];
  }
}
