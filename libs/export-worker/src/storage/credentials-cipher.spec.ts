import { CredentialsCipher } from './credentials-cipher';

describe('CredentialsCipher', () => {
  const creds = { access_key_id: 'AKIDEXAMPLE', secret_access_key: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

  it('round-trips with the same key and never stores the plaintext', () => {
    const c = new CredentialsCipher('a-sufficiently-long-key');
    const stored = c.encrypt(creds);
    expect(stored).not.toContain(creds.secret_access_key);
    expect(stored).not.toContain(creds.access_key_id);
    expect(c.encrypt(creds)).not.toBe(stored); // a fresh IV each time
    expect(new CredentialsCipher('a-sufficiently-long-key').decrypt(stored)).toEqual(creds);
  });

  it('refuses another key, tampered ciphertext and short keys', () => {
    const stored = new CredentialsCipher('a-sufficiently-long-key').encrypt(creds);
    expect(() => new CredentialsCipher('another-long-enough-key').decrypt(stored)).toThrow();
    const parts = stored.split('.');
    const data = Buffer.from(parts[3], 'base64');
    data[0] ^= 1;
    expect(() => new CredentialsCipher('a-sufficiently-long-key').decrypt([parts[0], parts[1], parts[2], data.toString('base64')].join('.'))).toThrow();
    expect(() => new CredentialsCipher('a-sufficiently-long-key').decrypt('garbage')).toThrow('Unrecognized');
    expect(() => new CredentialsCipher('short')).toThrow('at least 16');
  });
});
