import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { ExportDestinationCredentials } from '@th/contracts';

/**
 * AES-256-GCM for stored destination credentials. The key is the SHA-256 of the configured
 * secret, so any high-entropy string works; the stored form is `v1.<iv>.<tag>.<ciphertext>` (base64).
 */
export class CredentialsCipher {
  private readonly key: Buffer;
  constructor(secret: string) {
    if (secret.length < 16) throw new Error('The export encryption key must be at least 16 characters');
    this.key = createHash('sha256').update(secret, 'utf8').digest();
  }

  encrypt(credentials: ExportDestinationCredentials): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const data = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), data.toString('base64')].join('.');
  }

  decrypt(stored: string): ExportDestinationCredentials {
    const [version, iv, tag, data] = stored.split('.');
    if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('Unrecognized encrypted credentials');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    const plain = Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
    return JSON.parse(plain) as ExportDestinationCredentials;
  }
}
