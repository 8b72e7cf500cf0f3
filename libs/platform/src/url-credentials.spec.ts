import { hasUrlCredentials, maskUrlCredentials } from './url-credentials';

describe('maskUrlCredentials', () => {
  it.each([
    ['https://user:pass@s3.example.com/bucket', 'https://***@s3.example.com/bucket'],
    ['https://AKIA:se%2Fcret@host:9000', 'https://***@host:9000'],
    ['http://token@github.com/org/repo.git', 'http://***@github.com/org/repo.git'],
    ['https://a:b@c@host/x?u=a@b', 'https://***@host/x?u=a@b'],
    ['https://s3.example.com/bucket?x=user@host', 'https://s3.example.com/bucket?x=user@host'],
    ['no url here, mail user@example.com', 'no url here, mail user@example.com'],
    ['endpoint https://u:p@h1 and postgres://pg:pw@db:5432/x failed', 'endpoint https://***@h1 and postgres://***@db:5432/x failed'],
    ['{"msg":"clone https://x:y@git.example.com failed","url":"s3://k:s@b"}', '{"msg":"clone https://***@git.example.com failed","url":"s3://***@b"}'],
    ['https://', 'https://'],
    [':// @', ':// @'],
  ])('%s', (input, masked) => {
    expect(maskUrlCredentials(input)).toBe(masked);
    expect(maskUrlCredentials(masked)).toBe(masked.includes('***') ? masked : input);
  });

  it('tells a URL with credentials', () => {
    expect(hasUrlCredentials('https://u:p@host')).toBe(true);
    expect(hasUrlCredentials('https://host/path@x')).toBe(false);
  });

  it('is linear in the text', () => {
    const hostile = 'a://'.repeat(250_000) + 'x'.repeat(1_000_000);
    const t = performance.now();
    maskUrlCredentials(hostile);
    expect(performance.now() - t).toBeLessThan(500);
  });
});
