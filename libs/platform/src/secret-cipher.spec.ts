import { SecretCipher } from './secret-cipher';

describe('SecretCipher', () => {
  const cipher = new SecretCipher('a-sufficiently-long-key');

  it('seals to parts and to one text, never the plain value, and opens both', () => {
    const sealed = cipher.seal('hunter2-secret');
    expect(JSON.stringify(sealed)).not.toContain('hunter2');
    expect(cipher.open(sealed)).toBe('hunter2-secret');
    const text = cipher.sealText('hunter2-secret');
    expect(text).toMatch(/^v1\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]+\.[A-Za-z0-9+/=]*$/);
    expect(text).not.toContain('hunter2');
    expect(cipher.openText(text)).toBe('hunter2-secret');
    // A random IV per value: the same value seals differently each time.
    expect(cipher.sealText('x')).not.toBe(cipher.sealText('x'));
  });

  it('refuses a foreign key, a changed value and garbage', () => {
    const text = cipher.sealText('value');
    expect(() => new SecretCipher('another-long-enough-key').openText(text)).toThrow();
    const [v, iv, tag, data] = text.split('.');
    const flipped = Buffer.from(data, 'base64');
    flipped[0] ^= 1;
    expect(() => cipher.openText([v, iv, tag, flipped.toString('base64')].join('.'))).toThrow();
    expect(() => cipher.openText('garbage')).toThrow('Unrecognized sealed value');
    expect(() => cipher.openText(`${text}.more`)).toThrow('Unrecognized sealed value');
  });
});
