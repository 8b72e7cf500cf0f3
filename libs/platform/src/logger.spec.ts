import { JsonLogger } from './logger';

describe('JsonLogger', () => {
  it('masks credentials inside URLs in every field of a line', () => {
    const lines: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    try {
      const logger = new JsonLogger('test', 'info');
      logger.warn({ msg: 'clone of https://ghp_token123@github.com/acme/repo.git failed', endpoint: 'https://AKIA:s3cr3t@minio:9000' }, 'Ctx');
      logger.error(new Error('connect postgres://app:pw0rd@db:5432/x refused'));
    } finally {
      write.mockRestore();
    }
    expect(lines).toHaveLength(2);
    expect(lines.join('')).not.toMatch(/ghp_token123|s3cr3t|pw0rd/);
    expect(JSON.parse(lines[0])).toMatchObject({ msg: 'clone of https://***@github.com/acme/repo.git failed', endpoint: 'https://***@minio:9000', context: 'Ctx' });
  });
});
