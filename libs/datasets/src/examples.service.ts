import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { DatasetClone, DatasetVersionsDiff, Example, ExampleCreate, ExampleListQuery, ExampleUpdateWithId, Identity, ValidationErrorItem } from '@th/contracts';
import { AuditPublisher } from '@th/audit-client';
import { EventLoopPacer, ValidationFailed, conflict, forbidden, notFound } from '@th/platform';
import { DatasetsStore, EXAMPLE_COLUMNS, type DatasetRow, type ExampleRow } from './datasets.store';
import { parseJsonObject } from './datasets.service';
import { normalizeSplits, presentExample, storedMetadata } from './present';
import { ExampleSchemaValidator } from './schema-validator';
import { compileExampleFilter } from './example-filter';
import { openAiFineTuningRecord } from './openai-ft';
import { AttachmentSigner, dropUnreferencedBlobs, nextAttachments, storeUploads, type AttachmentMap, type AttachmentUpload } from './attachments';

type Loc = (string | number)[];

export interface CreateManyOptions {
  /** Join the caller's transaction; the caller then records the audit event. */
  manager?: EntityManager;
  /** Where a broken example is reported in a 422 (default ['body', index]). */
  locOf?: (index: number) => Loc;
  /** Files uploaded with the examples, by example index. */
  uploads?: AttachmentUpload[][];
}

/** Stores the attachments of the i-th new example (in the write's transaction), or gives null. */
type AttachmentsAt = (i: number, m: EntityManager) => Promise<AttachmentMap | null>;

/** Examples of datasets: every write makes one new dataset version; reads can go back to any version. */
@Injectable()
export class ExamplesService {
  constructor(
    private readonly store: DatasetsStore,
    private readonly validator: ExampleSchemaValidator,
    private readonly audit: AuditPublisher,
    private readonly signer: AttachmentSigner = new AttachmentSigner(store.ds),
  ) {}

  /** Examples as returned: with signed attachment URLs. */
  private async present(rows: ExampleRow[]): Promise<Example[]> {
    const sign = rows.some((r) => r.attachments) ? await this.signer.urlSigner() : undefined;
    // In slices of the event loop: a bulk write returns up to 10,000 examples.
    const pacer = new EventLoopPacer();
    const out: Example[] = [];
    for (const r of rows) {
      if (pacer.due()) await pacer.yield();
      out.push(presentExample(r, sign));
    }
    return out;
  }

  /** Tracked. */
  createOne(identity: Identity, datasetId: string, body: ExampleCreate): Promise<Example> {
    return this.audit.track(
      { identity, resources: [{ type: 'dataset', id: datasetId }] },
      async () => (await this.store.inTx(undefined, (m) => this.applyCreate(m, identity, datasetId, [body], () => ['body'])))[0],
      (e) => [{ type: 'dataset', id: datasetId }, { type: 'example', id: e.id }],
    );
  }

  /**
   * Validates every example against the dataset's schemas, then writes all of them or none, as one new dataset
   * version. Example ids may be given by the caller (409 when one exists already). Tracked, unless
   * `opts.manager` joins a caller's transaction (the caller records the audit event).
   */
  createMany(identity: Identity, datasetId: string, examples: ExampleCreate[], opts: CreateManyOptions = {}): Promise<Example[]> {
    const locOf = opts.locOf ?? ((i: number) => ['body', i]);
    const uploads = opts.uploads;
    const attachmentsAt: AttachmentsAt | undefined = uploads
      ? async (i, m) => (uploads[i]?.length ? storeUploads(m, identity.tenant_id, datasetId, uploads[i]) : null)
      : undefined;
    if (opts.manager) return this.applyCreate(opts.manager, identity, datasetId, examples, locOf, attachmentsAt);
    return this.audit.track(
      { identity, resources: [{ type: 'dataset', id: datasetId }] },
      () => this.store.inTx(undefined, (m) => this.applyCreate(m, identity, datasetId, examples, locOf, attachmentsAt)),
      (created) => [{ type: 'dataset', id: datasetId }, ...created.map((e) => ({ type: 'example', id: e.id }))],
    );
  }

  /** Examples for several datasets (POST /examples/bulk) in one transaction: one new version per dataset. */
  createForDatasets(identity: Identity, examples: (ExampleCreate & { dataset_id: string })[]): Promise<Example[]> {
    const byDataset = new Map<string, { e: ExampleCreate; i: number }[]>();
    examples.forEach((e, i) => {
      const group = byDataset.get(e.dataset_id);
      if (group) group.push({ e, i });
      else byDataset.set(e.dataset_id, [{ e, i }]);
    });
    const datasetIds = [...byDataset.keys()].sort();
    return this.audit.track(
      { identity, resources: datasetIds.map((id) => ({ type: 'dataset', id })) },
      () =>
        this.store.inTx(undefined, async (m) => {
          const out: Example[] = [];
          for (const id of datasetIds) {
            const group = byDataset.get(id) as { e: ExampleCreate; i: number }[];
            out.push(...(await this.applyCreate(m, identity, id, group.map((g) => g.e), (k) => ['body', group[k].i])));
          }
          return out;
        }),
      (created) => [...datasetIds.map((id) => ({ type: 'dataset', id })), ...created.map((e) => ({ type: 'example', id: e.id }))],
    );
  }

  private async applyCreate(
    m: EntityManager,
    identity: Identity,
    datasetId: string,
    examples: ExampleCreate[],
    locOf: (i: number) => Loc,
    attachmentsAt?: AttachmentsAt,
  ): Promise<Example[]> {
    const version = await this.store.nextVersion(m, identity.tenant_id, datasetId);
    const d = await this.store.getDataset(m, identity.tenant_id, datasetId);
    const errors: ValidationErrorItem[] = [];
    const rows: ExampleRow[] = examples.map((e, i) => {
      if (e.dataset_id != null && e.dataset_id !== datasetId) errors.push({ loc: [...locOf(i), 'dataset_id'], msg: `must be ${datasetId}`, type: 'value_error' });
      errors.push(...this.schemaErrors(d, e.inputs, e.outputs ?? null, locOf(i)));
      return {
        id: e.id ?? randomUUID(),
        dataset_id: datasetId,
        tenant_id: identity.tenant_id,
        inputs: e.inputs,
        outputs: e.outputs ?? null,
        metadata: storedMetadata(e.metadata),
        splits: normalizeSplits(e.split, e.metadata),
        source_run_id: e.source_run_id ?? null,
        created_at: e.created_at ? new Date(e.created_at) : version.asOf,
        modified_at: version.asOf,
      };
    });
    if (errors.length > 0) throw new ValidationFailed(errors.slice(0, 50));
    const seen = new Set<string>();
    for (const r of rows) {
      if (seen.has(r.id)) throw conflict(`Example id ${r.id} appears twice in the request`);
      seen.add(r.id);
    }
    if (attachmentsAt) for (let i = 0; i < rows.length; i++) rows[i].attachments = await attachmentsAt(i, m);
    await this.store.insertExampleRows(m, version, rows);
    return this.present(rows);
  }

  private schemaErrors(d: DatasetRow, inputs: Record<string, unknown>, outputs: Record<string, unknown> | null, loc: Loc): ValidationErrorItem[] {
    return [
      ...this.validator.errors(d.inputs_schema_definition, inputs, [...loc, 'inputs']),
      ...this.validator.errors(d.outputs_schema_definition, outputs ?? {}, [...loc, 'outputs']),
    ];
  }

  /** The example now, or as of a version of its dataset (`as_of`: timestamp or tag). 404 when absent then. */
  async get(identity: Identity, id: string, asOf?: string): Promise<Example> {
    if (asOf === undefined || asOf === 'latest') {
      const rows = (await this.store.ds.query(`SELECT ${EXAMPLE_COLUMNS} FROM "datasets"."examples" e WHERE e.tenant_id = $1 AND e.id = $2 AND e.valid_to IS NULL`, [
        identity.tenant_id,
        id,
      ])) as ExampleRow[];
      if (!rows[0]) throw notFound(`Example ${id}`);
      return (await this.present(rows))[0];
    }
    const any = (await this.store.ds.query(`SELECT dataset_id FROM "datasets"."examples" WHERE tenant_id = $1 AND id = $2 LIMIT 1`, [identity.tenant_id, id])) as { dataset_id: string }[];
    if (!any[0]) throw notFound(`Example ${id}`);
    const list = await this.list(identity, { dataset: any[0].dataset_id, id: [id], as_of: asOf, offset: 0, limit: 1 });
    if (!list[0]) throw notFound(`Example ${id} as of ${asOf}`);
    return list[0];
  }

  /** Lists examples of a dataset (current, or as of a version) or by id; filters by ids, splits and metadata. */
  /** GET /datasets/{id}/openai_ft: the dataset's current examples as OpenAI fine-tuning JSON lines, oldest first. */
  async openAiFineTuning(identity: Identity, datasetId: string): Promise<string> {
    await this.store.getDataset(this.store.ds, identity.tenant_id, datasetId);
    const lines: string[] = [];
    const page = 1000;
    for (let offset = 0; ; offset += page) {
      const examples = await this.list(identity, { dataset: datasetId, offset, limit: page, order: 'oldest' });
      for (const e of examples) lines.push(JSON.stringify(openAiFineTuningRecord(e)));
      if (examples.length < page) break;
    }
    return lines.length ? `${lines.join('\n')}\n` : '';
  }

  async list(identity: Identity, q: ExampleListQuery): Promise<Example[]> {
    const metadata = parseJsonObject(q.metadata, ['query', 'metadata']);
    if (q.dataset === undefined && !q.id?.length) throw new ValidationFailed([{ loc: ['query', 'dataset'], msg: 'give dataset or id', type: 'missing' }]);
    if (q.dataset === undefined && q.as_of !== undefined) throw new ValidationFailed([{ loc: ['query', 'dataset'], msg: 'as_of needs dataset', type: 'missing' }]);
    const where = ['e.tenant_id = $1'];
    const params: unknown[] = [identity.tenant_id];
    const add = (sql: (p: string) => string, v: unknown) => {
      params.push(v);
      where.push(sql(`$${params.length}`));
    };
    if (q.dataset !== undefined) {
      const d = await this.store.getDataset(this.store.ds, identity.tenant_id, q.dataset);
      const v = await this.store.resolveVersion(this.store.ds, d, q.as_of);
      add((p) => `e.dataset_id = ${p}`, d.id);
      if (v === d.current_version) where.push('e.valid_to IS NULL');
      else add((p) => `e.valid_from <= ${p} AND (e.valid_to IS NULL OR e.valid_to > ${p})`, v);
    } else {
      where.push('e.valid_to IS NULL');
    }
    if (q.id?.length) add((p) => `e.id = ANY(${p}::uuid[])`, q.id);
    if (q.splits?.length) add((p) => `e.splits && ${p}::text[]`, q.splits);
    if (metadata) add((p) => `coalesce(e.metadata, '{}'::jsonb) @> ${p}::jsonb`, JSON.stringify(storedMetadata(metadata)));
    if (q.filter !== undefined) where.push(compileExampleFilter(q.filter, params));
    const dir = q.order === 'recent' ? 'DESC' : 'ASC';
    params.push(q.offset, q.limit);
    const rows = (await this.store.ds.query(
      `SELECT ${EXAMPLE_COLUMNS} FROM "datasets"."examples" e WHERE ${where.join(' AND ')} ORDER BY e.created_at ${dir}, e.id ${dir} OFFSET $${params.length - 1} LIMIT $${params.length}`,
      params,
    )) as ExampleRow[];
    return this.present(rows);
  }

  /** Tracked. */
  updateOne(identity: Identity, id: string, body: Omit<ExampleUpdateWithId, 'id'>): Promise<Example> {
    return this.audit.track({ identity, resources: [{ type: 'example', id }] }, async () => {
      const out = await this.applyUpdates(identity, [{ ...body, id }], () => ['body']);
      return out[0];
    });
  }

  /** Tracked. All or nothing; one new version per dataset touched. */
  updateMany(identity: Identity, updates: ExampleUpdateWithId[], datasetId?: string, opts: { uploads?: AttachmentUpload[][]; locOf?: (i: number) => Loc } = {}): Promise<Example[]> {
    return this.audit.track(
      { identity, resources: updates.map((u) => ({ type: 'example', id: u.id })) },
      () => this.applyUpdates(identity, updates, opts.locOf ?? ((i) => ['body', i]), datasetId, opts.uploads),
    );
  }

  private async applyUpdates(identity: Identity, updates: ExampleUpdateWithId[], locOf: (i: number) => Loc, datasetId?: string, uploads?: AttachmentUpload[][]): Promise<Example[]> {
    const ids = updates.map((u) => u.id);
    if (new Set(ids).size !== ids.length) throw new ValidationFailed([{ loc: ['body'], msg: 'an example id appears twice', type: 'value_error' }]);
    return this.store.inTx(undefined, async (m) => {
      const datasets = await this.lockDatasetsOf(m, identity, ids, datasetId, true);
      const current = new Map((await this.store.currentExamples(m, identity.tenant_id, ids, true)).map((r) => [r.id, r]));
      const errors: ValidationErrorItem[] = [];
      const next: ExampleRow[] = updates.map((u, i) => {
        const old = current.get(u.id) as ExampleRow;
        if (u.dataset_id != null && u.dataset_id !== old.dataset_id) errors.push({ loc: [...locOf(i), 'dataset_id'], msg: 'an example cannot move to another dataset', type: 'value_error' });
        const row: ExampleRow = {
          ...old,
          inputs: u.inputs ?? old.inputs,
          outputs: u.outputs ?? old.outputs,
          metadata: u.metadata != null ? storedMetadata(u.metadata) : old.metadata,
          splits: u.split != null || u.metadata?.dataset_split != null ? normalizeSplits(u.split, u.metadata) : old.splits,
        };
        errors.push(...this.schemaErrors(datasets.get(old.dataset_id) as DatasetRow, row.inputs, row.outputs, locOf(i)));
        errors.push(...nextAttachments(old.attachments ?? null, u.attachments_operations, {}, locOf(i)).errors);
        return row;
      });
      if (errors.length > 0) throw new ValidationFailed(errors.slice(0, 50));
      for (let i = 0; i < updates.length; i++) {
        const old = current.get(updates[i].id) as ExampleRow;
        const files = uploads?.[i] ?? [];
        if (files.length === 0 && updates[i].attachments_operations == null) continue;
        const stored = files.length ? await storeUploads(m, identity.tenant_id, old.dataset_id, files) : {};
        next[i].attachments = nextAttachments(old.attachments ?? null, updates[i].attachments_operations, stored, locOf(i)).map;
      }
      return this.writeNewStates(m, identity, datasets, next);
    });
  }

  /** Replaces the current states of `rows` (grouped by dataset) with these, one new version per dataset. */
  private async writeNewStates(m: EntityManager, identity: Identity, datasets: Map<string, DatasetRow>, rows: ExampleRow[]): Promise<Example[]> {
    const out: Example[] = [];
    for (const datasetId of [...datasets.keys()].sort()) {
      const group = rows.filter((r) => r.dataset_id === datasetId);
      if (group.length === 0) continue;
      const version = await this.store.nextVersion(m, identity.tenant_id, datasetId);
      await this.store.closeExampleRows(m, identity.tenant_id, datasetId, group.map((r) => r.id), version.version);
      const written = group.map((r) => ({ ...r, modified_at: version.asOf }));
      await this.store.insertExampleRows(m, version, written);
      out.push(...(await this.present(written)));
    }
    return out;
  }

  /**
   * Locks (FOR UPDATE, in id order) the datasets holding these current examples; 404 when one is not found or is
   * in another dataset than `datasetId`, or 409 for the latter with `conflictElsewhere` (example updates: the SDKs
   * expect a conflict there).
   */
  private async lockDatasetsOf(m: EntityManager, identity: Identity, ids: string[], datasetId?: string, conflictElsewhere = false): Promise<Map<string, DatasetRow>> {
    const rows = await this.store.currentExamples(m, identity.tenant_id, ids, false);
    const found = new Map(rows.map((r) => [r.id, r.dataset_id]));
    const elsewhere = datasetId === undefined ? undefined : ids.find((id) => found.has(id) && found.get(id) !== datasetId);
    if (elsewhere && conflictElsewhere) throw conflict(`Example ${elsewhere} belongs to another dataset than ${datasetId}`);
    const missing = ids.find((id) => !found.has(id) || id === elsewhere);
    if (missing) throw notFound(`Example ${missing}`);
    const out = new Map<string, DatasetRow>();
    for (const dsId of [...new Set(found.values())].sort()) {
      await m.query(`SELECT 1 FROM "datasets"."datasets" WHERE id = $1 AND tenant_id = $2 FOR UPDATE`, [dsId, identity.tenant_id]);
      out.set(dsId, await this.store.getDataset(m, identity.tenant_id, dsId));
    }
    // An example could have been deleted or replaced between the read and the lock: read again under the lock.
    const again = await this.store.currentExamples(m, identity.tenant_id, ids, true);
    if (again.length !== ids.length) throw notFound(`Example ${ids.find((id) => !again.some((r) => r.id === id))}`);
    return out;
  }

  /** Tracked. */
  deleteOne(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ identity, resources: [{ type: 'example', id }] }, () => this.applyDelete(identity, [id], false));
  }

  /**
   * Tracked. All or nothing. A soft delete ends the examples at a new version (older versions
   * still show them); a hard delete also removes their history.
   */
  deleteMany(identity: Identity, ids: string[], hard = false): Promise<void> {
    const unique = [...new Set(ids)];
    return this.audit.track({ identity, resources: unique.map((id) => ({ type: 'example', id })) }, () =>
      this.applyDelete(identity, unique, hard),
    );
  }

  private applyDelete(identity: Identity, ids: string[], hard: boolean): Promise<void> {
    return this.store.inTx(undefined, async (m) => {
      const datasets = await this.lockDatasetsOf(m, identity, ids);
      const current = await this.store.currentExamples(m, identity.tenant_id, ids, true);
      for (const datasetId of [...datasets.keys()].sort()) {
        const group = current.filter((r) => r.dataset_id === datasetId).map((r) => r.id);
        const version = await this.store.nextVersion(m, identity.tenant_id, datasetId);
        if (hard) {
          await m.query(`DELETE FROM "datasets"."examples" WHERE tenant_id = $3 AND dataset_id = $1 AND id = ANY($2::uuid[])`, [datasetId, group, identity.tenant_id]);
          await dropUnreferencedBlobs(m, identity.tenant_id, datasetId);
        } else await this.store.closeExampleRows(m, identity.tenant_id, datasetId, group, version.version);
      }
    });
  }

  /** Example ids added, removed and modified between two versions (timestamps or tags) of a dataset. */
  async diff(identity: Identity, datasetId: string, from: string, to: string): Promise<DatasetVersionsDiff> {
    const d = await this.store.getDataset(this.store.ds, identity.tenant_id, datasetId);
    const [a, b] = [await this.store.resolveVersion(this.store.ds, d, from), await this.store.resolveVersion(this.store.ds, d, to)];
    const rows = (await this.store.ds.query(
      `WITH va AS (SELECT id, row_id FROM "datasets"."examples" WHERE tenant_id = $4 AND dataset_id = $1 AND valid_from <= $2 AND (valid_to IS NULL OR valid_to > $2)),
            vb AS (SELECT id, row_id FROM "datasets"."examples" WHERE tenant_id = $4 AND dataset_id = $1 AND valid_from <= $3 AND (valid_to IS NULL OR valid_to > $3))
       SELECT coalesce(va.id, vb.id) AS id, CASE WHEN va.id IS NULL THEN 'added' WHEN vb.id IS NULL THEN 'removed' ELSE 'modified' END AS kind
       FROM va FULL JOIN vb ON va.id = vb.id WHERE va.id IS NULL OR vb.id IS NULL OR va.row_id <> vb.row_id ORDER BY 1`,
      [d.id, a, b, d.tenant_id],
    )) as { id: string; kind: 'added' | 'removed' | 'modified' }[];
    const of = (k: string) => rows.filter((r) => r.kind === k).map((r) => r.id);
    return { examples_modified: of('modified'), examples_added: of('added'), examples_removed: of('removed') };
  }

  /** Split names in use by the dataset's examples (now or as of a version). */
  async splits(identity: Identity, datasetId: string, asOf?: string): Promise<string[]> {
    const d = await this.store.getDataset(this.store.ds, identity.tenant_id, datasetId);
    const v = await this.store.resolveVersion(this.store.ds, d, asOf);
    const rows = (await this.store.ds.query(
      `SELECT DISTINCT unnest(e.splits) AS s FROM "datasets"."examples" e
       WHERE e.tenant_id = $3 AND e.dataset_id = $1 AND e.valid_from <= $2 AND (e.valid_to IS NULL OR e.valid_to > $2) ORDER BY 1`,
      [d.id, v, d.tenant_id],
    )) as { s: string }[];
    return rows.map((r) => r.s);
  }

  /** Tracked. Adds these examples to (or removes them from) a split, as one new version. */
  updateSplits(identity: Identity, datasetId: string, split: string, exampleIds: string[], remove: boolean): Promise<string[]> {
    const ids = [...new Set(exampleIds)];
    return this.audit.track({ identity, resources: [{ type: 'dataset', id: datasetId }] }, () =>
      this.store.inTx(undefined, async (m) => {
        await this.store.getDataset(m, identity.tenant_id, datasetId);
        if (ids.length === 0) return [];
        const datasets = await this.lockDatasetsOf(m, identity, ids, datasetId);
        const current = await this.store.currentExamples(m, identity.tenant_id, ids, true);
        const next = current.map((r) => ({ ...r, splits: remove ? r.splits.filter((s) => s !== split) : [...new Set([...r.splits, split])].sort() }));
        await this.writeNewStates(m, identity, datasets, next);
        return ids;
      }),
    );
  }

  /**
   * Tracked. Copies the source's examples (as of a version, optionally only some ids or splits) into
   * the target as new examples with new ids, validated against the target's schemas, as one new target version.
   */
  clone(identity: Identity, body: DatasetClone): Promise<Example[]> {
    return this.audit.track(
      { identity, resources: [{ type: 'dataset', id: body.source_dataset_id }, { type: 'dataset', id: body.target_dataset_id }] },
      () =>
        this.store.inTx(undefined, async (m) => {
          const source = await this.store.getDataset(m, identity.tenant_id, body.source_dataset_id);
          const v = await this.store.resolveVersion(m, source, body.as_of ?? undefined);
          const params: unknown[] = [source.id, v, source.tenant_id];
          let filter = '';
          if (body.examples?.length) {
            params.push(body.examples);
            filter += ` AND e.id = ANY($${params.length}::uuid[])`;
          }
          const splits = body.split == null ? [] : Array.isArray(body.split) ? body.split : [body.split];
          if (splits.length) {
            params.push(splits);
            filter += ` AND e.splits && $${params.length}::text[]`;
          }
          const rows = (await m.query(
            `SELECT ${EXAMPLE_COLUMNS} FROM "datasets"."examples" e
             WHERE e.tenant_id = $3 AND e.dataset_id = $1 AND e.valid_from <= $2 AND (e.valid_to IS NULL OR e.valid_to > $2)${filter} ORDER BY e.created_at, e.id`,
            params,
          )) as ExampleRow[];
          if (body.examples?.length) {
            const found = new Set(rows.map((r) => r.id));
            const missing = body.examples.find((id) => !found.has(id));
            if (missing) throw notFound(`Example ${missing} in dataset ${source.id}`);
          }
          return this.applyCreate(
            m,
            identity,
            body.target_dataset_id,
            rows.map((r) => ({ inputs: r.inputs, outputs: r.outputs, metadata: r.metadata, split: r.splits, source_run_id: r.source_run_id })),
            (i) => ['body', 'examples', rows[i].id],
            (i, tx) => this.copyAttachments(tx, rows[i].attachments ?? null, body.target_dataset_id),
          );
        }),
      (created) => [{ type: 'dataset', id: body.source_dataset_id }, { type: 'dataset', id: body.target_dataset_id }, ...created.map((e) => ({ type: 'example', id: e.id }))],
    );
  }

  /** Copies attachment blobs into another dataset (a clone owns its files: deleting the source keeps them). */
  private async copyAttachments(m: EntityManager, from: AttachmentMap | null, targetDatasetId: string): Promise<AttachmentMap | null> {
    if (!from) return null;
    const out: AttachmentMap = {};
    for (const [name, a] of Object.entries(from)) {
      const id = randomUUID();
      await m.query(
        `INSERT INTO "datasets"."attachment_blobs" (id, dataset_id, tenant_id, mime_type, data)
         SELECT $1, $2, tenant_id, mime_type, data FROM "datasets"."attachment_blobs" WHERE id = $3`,
        [id, targetDatasetId, a.blob_id],
      );
      out[name] = { blob_id: id, mime_type: a.mime_type };
    }
    return out;
  }

  /** An attachment's bytes, when the signature of its download URL holds (else 403; 404 when gone). */
  async download(blobId: string, expires: number, signature: string): Promise<{ mime_type: string; data: Buffer }> {
    if (!(await this.signer.verify(blobId, expires, signature))) throw forbidden('The attachment URL is invalid or has expired');
    const rows = (await this.store.ds.query(`SELECT mime_type, data FROM "datasets"."attachment_blobs" WHERE id = $1`, [blobId])) as { mime_type: string; data: Buffer }[];
    if (!rows[0]) throw notFound(`Attachment ${blobId}`);
    return rows[0];
  }

  /** Examples of a shared dataset, read through its share token (no workspace). */
  publicList(d: DatasetRow, q: ExampleListQuery): Promise<Example[]> {
    return this.list({ tenant_id: d.tenant_id } as Identity, { ...q, dataset: d.id });
  }
}
