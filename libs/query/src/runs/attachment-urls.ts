import type { DataSource } from 'typeorm';
import { UrlSigner } from '@th/platform';

/** How long a run attachment's download URL stays valid. */
export const RUN_ATTACHMENT_URL_TTL_SECONDS = 3600;
export const RUN_ATTACHMENT_ROUTE = '/public/run-attachments';

/** The download URLs of run attachments (`s3_urls` of a run, fetched by the SDKs without an API key). */
export class RunAttachmentSigner {
  private readonly urls: UrlSigner;

  constructor(ds: DataSource) {
    this.urls = new UrlSigner(ds, '"query"."signing_keys"', 'run-attachments', RUN_ATTACHMENT_URL_TTL_SECONDS);
  }

  /** A function giving the signed path of a run's attachment (call once per response: one expiry for all its URLs). */
  async urlSigner(tenantId: string, now = Date.now()): Promise<(runId: string, name: string) => string> {
    const sign = await this.urls.signer(now);
    return (runId, name) => `${RUN_ATTACHMENT_ROUTE}/${tenantId}/${runId}/${encodeURIComponent(name)}?${sign([tenantId, runId, name])}`;
  }

  /** Whether this signature for this attachment and expiry is genuine and not expired. */
  verify(tenantId: string, runId: string, name: string, expires: number, signature: string, now = Date.now()): Promise<boolean> {
    return this.urls.verify([tenantId, runId, name], expires, signature, now);
  }
}
