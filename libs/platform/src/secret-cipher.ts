import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/** A value sealed at rest: AES-256-GCM with a random 96-bit IV per value; the parts in base64. */
export interface SealedValue {
  iv: string;
  tag: string;
  data: string;
}

const TEXT_VERSION = 'v1';

/**
 * The one cipher of values kept at rest (deployment secrets, export destination credentials,
 * workspace secrets). The key is the SHA-256 of the configured key material, so any high-entropy
 * string works. Two stored forms of the same sealing: the parts (a JSON column), or one text,
 * `v1.<iv>.<tag>.<data>`. GCM's tag makes a changed or foreign value fail to open.
 */
export class SecretCipher {
  private readonly key: Buffer;
  constructor(keyMaterial: string) {
    this.key = createHash('sha256').update(keyMaterial, 'utf8').digest();
  }

  seal(plain: string): SealedValue {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return { iv: iv.toString('base64'), tag: c.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  open(v: SealedValue): string {
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(v.iv, 'base64'));
    d.setAuthTag(Buffer.from(v.tag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(v.data, 'base64')), d.final()]).toString('utf8');
  }

  sealText(plain: string): string {
    const v = this.seal(plain);
    return [TEXT_VERSION, v.iv, v.tag, v.data].join('.');
  }

  openText(stored: string): string {
    const [version, iv, tag, data, extra] = stored.split('.');
    if (version !== TEXT_VERSION || !iv || !tag || data === undefined || extra !== undefined) throw new Error('Unrecognized sealed value');
    return this.open({ iv, tag, data });
  }
}
