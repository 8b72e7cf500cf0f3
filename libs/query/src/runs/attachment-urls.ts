import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { DataSource } from 'typeorm';

/** How long a run attachment's download URL stays valid. */
export const RUN_ATTACHMENT_URL_TTL_SECONDS = 3600;
export const RUN_ATTACHMENT_ROUTE = '/public/run-attachments';

/**
 * Signs and checks the download URLs of run attachments (`s3_urls` of a run, fetched by the SDKs without an
 * API key): HMAC-SHA256 over the workspace, run, attachment name and expiry, with a key made once per database.
 */
export class RunAttachmentSigner {
  private key: Promise<Buffer> | undefined;

  constructor(private readonly ds: DataSource) {}

  private loadKey(): Promise<Buffer> {
    this.key ??= (async () => {
      await this.ds.query(`INSERT INTO "query"."signing_keys" (purpose, key) VALUES ('run-attachments', $1) ON CONFLICT (purpose) DO NOTHING`, [
        randomBytes(32).toString('base64url'),
      ]);
      const rows = (await this.ds.query(`SELECT key FROM "query"."signing_keys" WHERE purpose = 'run-attachments'`)) as { key: string }[];
      return Buffer.from(rows[0].key, 'base64url');
    })().catch((err) => {
      this.key = undefined;
      throw err;
    });
    return this.key;
  }

  private static mac(key: Buffer, tenantId: string, runId: string, name: string, expires: number): string {
    return createHmac('sha256', key).update(JSON.stringify([tenantId, runId, name, expires])).digest('base64url');
  }

  /** A function giving the signed path of a run's attachment (call once per response: one expiry for all its URLs). */
  async urlSigner(tenantId: string, now = Date.now()): Promise<(runId: string, name: string) => string> {
    const key = await this.loadKey();
    const expires = Math.floor(now / 1000) + RUN_ATTACHMENT_URL_TTL_SECONDS;
    return (runId, name) =>
      `${RUN_ATTACHMENT_ROUTE}/${tenantId}/${runId}/${encodeURIComponent(name)}?expires=${expires}&signature=${RunAttachmentSigner.mac(key, tenantId, runId, name, expires)}`;
  }

  /** Whether this signature for this attachment and expiry is genuine and not expired. */
  async verify(tenantId: string, runId: string, name: string, expires: number, signature: string, now = Date.now()): Promise<boolean> {
    if (!Number.isSafeInteger(expires) || expires * 1000 < now) return false;
    const expected = Buffer.from(RunAttachmentSigner.mac(await this.loadKey(), tenantId, runId, name, expires));
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
