import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { ExampleAttachmentsOperations, ValidationErrorItem } from '@th/contracts';
import { UrlSigner } from '@th/platform';

/** One stored attachment of an example state. */
export interface AttachmentRef {
  blob_id: string;
  mime_type: string;
}
export type AttachmentMap = Record<string, AttachmentRef>;

/** A file uploaded with an example (multipart part `<id>.attachment.<name>`). */
export interface AttachmentUpload {
  name: string;
  mime_type: string;
  data: Buffer;
}

/** How long a download URL stays valid. */
export const ATTACHMENT_URL_TTL_SECONDS = 3600;
export const ATTACHMENT_ROUTE = '/public/example-attachments';

/** The download URLs of example attachments (read without an API key). */
export class AttachmentSigner {
  private readonly urls: UrlSigner;

  constructor(ds: DataSource) {
    this.urls = new UrlSigner(ds, '"datasets"."signing_keys"', 'attachments', ATTACHMENT_URL_TTL_SECONDS);
  }

  /** A function giving the signed path of a blob (call once per response: one expiry for all its URLs). */
  async urlSigner(now = Date.now()): Promise<(blobId: string) => string> {
    const sign = await this.urls.signer(now);
    return (blobId) => `${ATTACHMENT_ROUTE}/${blobId}?${sign([blobId])}`;
  }

  /** Whether this signature for this blob and expiry is genuine and not expired. */
  verify(blobId: string, expires: number, signature: string, now = Date.now()): Promise<boolean> {
    return this.urls.verify([blobId], expires, signature, now);
  }
}

/** Writes uploaded files as blobs of the dataset; returns their references by name. */
export async function storeUploads(m: EntityManager, tenantId: string, datasetId: string, uploads: AttachmentUpload[]): Promise<AttachmentMap> {
  const out: AttachmentMap = {};
  for (const u of uploads) {
    const id = randomUUID();
    await m.query(`INSERT INTO "datasets"."attachment_blobs" (id, dataset_id, tenant_id, mime_type, data) VALUES ($1, $2, $3, $4, $5)`, [id, datasetId, tenantId, u.mime_type, u.data]);
    out[u.name] = { blob_id: id, mime_type: u.mime_type };
  }
  return out;
}

/**
 * The attachments of an updated example: the old ones kept by `ops` (without ops: all of them when nothing is
 * uploaded, none when files are), renamed, plus the new uploads. Errors name the attachments that `ops` refers to but the example does not have.
 */
export function nextAttachments(
  old: AttachmentMap | null,
  ops: ExampleAttachmentsOperations | null | undefined,
  uploaded: AttachmentMap,
  loc: (string | number)[],
): { map: AttachmentMap | null; errors: ValidationErrorItem[] } {
  const current = old ?? {};
  const errors: ValidationErrorItem[] = [];
  let kept: AttachmentMap;
  // Without operations, new files replace the example's attachments (what the SDKs expect); no files keep them.
  if (ops == null) kept = Object.keys(uploaded).length > 0 ? {} : { ...current };
  else {
    kept = {};
    for (const name of ops.retain ?? []) {
      if (!(name in current)) errors.push({ loc: [...loc, 'attachments_operations', 'retain'], msg: `the example has no attachment "${name}"`, type: 'value_error' });
      else kept[name] = current[name];
    }
    for (const [from, to] of Object.entries(ops.rename ?? {})) {
      if (!(from in current)) errors.push({ loc: [...loc, 'attachments_operations', 'rename', from], msg: `the example has no attachment "${from}"`, type: 'value_error' });
      else if (to in kept) errors.push({ loc: [...loc, 'attachments_operations', 'rename', from], msg: `attachment name "${to}" is used twice`, type: 'value_error' });
      else kept[to] = current[from];
    }
  }
  const map = { ...kept, ...uploaded };
  return { map: Object.keys(map).length > 0 ? map : null, errors };
}

/** Removes blobs of a dataset that no example state (current or past) names any more. */
export async function dropUnreferencedBlobs(m: EntityManager, tenantId: string, datasetId: string): Promise<void> {
  await m.query(
    `DELETE FROM "datasets"."attachment_blobs" b WHERE b.tenant_id = $2 AND b.dataset_id = $1 AND NOT EXISTS (
       SELECT 1 FROM "datasets"."examples" e, jsonb_each(e.attachments) a
       WHERE e.tenant_id = $2 AND e.dataset_id = $1 AND e.attachments IS NOT NULL AND a.value->>'blob_id' = b.id::text)`,
    [datasetId, tenantId],
  );
}
