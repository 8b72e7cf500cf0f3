import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Runs SQL on the service's own PostgreSQL (a TypeORM DataSource fits). */
export interface SigningKeyStore {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/**
 * Signs and checks download URLs read without an API key (attachments of runs and examples): HMAC-SHA256 over
 * the parts that name the object and the expiry, with a key made once per database and purpose in `table`
 * (`purpose text primary key, key text`), so every replica signs alike and no setting is needed.
 */
export class UrlSigner {
  private key: Promise<Buffer> | undefined;

  constructor(
    private readonly db: SigningKeyStore,
    /** Schema-qualified and quoted, e.g. `"query"."signing_keys"`: a constant of the caller, never input. */
    private readonly table: string,
    private readonly purpose: string,
    private readonly ttlSeconds: number,
  ) {}

  private loadKey(): Promise<Buffer> {
    this.key ??= (async () => {
      await this.db.query(`INSERT INTO ${this.table} (purpose, key) VALUES ($1, $2) ON CONFLICT (purpose) DO NOTHING`, [this.purpose, randomBytes(32).toString('base64url')]);
      const rows = (await this.db.query(`SELECT key FROM ${this.table} WHERE purpose = $1`, [this.purpose])) as { key: string }[];
      return Buffer.from(rows[0].key, 'base64url');
    })().catch((err) => {
      this.key = undefined;
      throw err;
    });
    return this.key;
  }

  private static mac(key: Buffer, parts: readonly string[], expires: number): string {
    return createHmac('sha256', key).update(JSON.stringify([...parts, expires])).digest('base64url');
  }

  /** A function giving `?expires=..&signature=..` for an object's parts (call once per response: one expiry for all). */
  async signer(now = Date.now()): Promise<(parts: readonly string[]) => string> {
    const key = await this.loadKey();
    const expires = Math.floor(now / 1000) + this.ttlSeconds;
    return (parts) => `expires=${expires}&signature=${UrlSigner.mac(key, parts, expires)}`;
  }

  /** Whether this signature for these parts and expiry is genuine and not expired. */
  async verify(parts: readonly string[], expires: number, signature: string, now = Date.now()): Promise<boolean> {
    if (!Number.isSafeInteger(expires) || expires * 1000 < now) return false;
    const expected = Buffer.from(UrlSigner.mac(await this.loadKey(), parts, expires));
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
