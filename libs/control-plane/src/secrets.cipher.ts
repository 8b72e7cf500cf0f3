import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Secret } from '@th/contracts';

/** A secret value at rest: AES-256-GCM with a random IV per value. */
export interface SealedValue {
  iv: string;
  tag: string;
  data: string;
}
export interface SealedSecret extends SealedValue {
  name: string;
}

/** Encrypts secrets before they reach the database; only the rollout drivers decrypt them. */
export class SecretsCipher {
  private readonly key: Buffer;
  constructor(keyMaterial: string) {
    // Any length of key material works: it is stretched to the 32 bytes AES-256 needs.
    this.key = createHash('sha256').update(keyMaterial).digest();
  }

  seal(value: string): SealedValue {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([c.update(value, 'utf8'), c.final()]);
    return { iv: iv.toString('base64'), tag: c.getAuthTag().toString('base64'), data: data.toString('base64') };
  }

  open(v: SealedValue): string {
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(v.iv, 'base64'));
    d.setAuthTag(Buffer.from(v.tag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(v.data, 'base64')), d.final()]).toString('utf8');
  }

  sealAll(secrets: Secret[]): SealedSecret[] {
    return secrets.map((s) => ({ name: s.name, ...this.seal(s.value) }));
  }

  openAll(sealed: SealedSecret[]): Secret[] {
    return sealed.map((s) => ({ name: s.name, value: this.open(s) }));
  }
}
