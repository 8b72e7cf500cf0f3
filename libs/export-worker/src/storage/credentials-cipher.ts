import type { ExportDestinationCredentials } from '@th/contracts';
import { SecretCipher } from '@th/platform';

/** Stored destination credentials: their JSON sealed by the shared SecretCipher, `v1.<iv>.<tag>.<ciphertext>`. */
export class CredentialsCipher {
  private readonly cipher: SecretCipher;
  constructor(secret: string) {
    if (secret.length < 16) throw new Error('The export encryption key must be at least 16 characters');
    this.cipher = new SecretCipher(secret);
  }

  encrypt(credentials: ExportDestinationCredentials): string {
    return this.cipher.sealText(JSON.stringify(credentials));
  }

  decrypt(stored: string): ExportDestinationCredentials {
    return JSON.parse(this.cipher.openText(stored)) as ExportDestinationCredentials;
  }
}
