import type { Secret } from '@th/contracts';
import { SecretCipher, type SealedValue } from '@th/platform';

export type { SealedValue } from '@th/platform';
export interface SealedSecret extends SealedValue {
  name: string;
}

/** Encrypts deployment secrets before they reach the database (the shared SecretCipher); only the rollout drivers open them. */
export class SecretsCipher extends SecretCipher {
  sealAll(secrets: Secret[]): SealedSecret[] {
    return secrets.map((s) => ({ name: s.name, ...this.seal(s.value) }));
  }

  openAll(sealed: SealedSecret[]): Secret[] {
    return sealed.map((s) => ({ name: s.name, value: this.open(s) }));
  }
}
