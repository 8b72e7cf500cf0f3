import { execFile, spawnSync } from 'node:child_process';
import { OutboundPolicy, type Resolver } from '@th/platform';
import { startConnectionCounter, type ConnectionCounter } from '@th/testing';
import { GitSource, GitSourceRefused } from './git-source';

const PUBLIC = '93.184.215.14';
const resolverOf = (table: Record<string, string>): Resolver => async (host) => {
  if (!table[host]) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return [{ address: table[host], family: table[host].includes(':') ? 6 : 4 }];
};

describe('GitSource', () => {
  const git = new GitSource(new OutboundPolicy('', resolverOf({ 'git.example': PUBLIC, 'inside.example': '10.1.2.3' })), false);

  it.each([
    ['http://git.example/r.git', 'must be a https URL'], ['ssh://git@git.example/r.git', 'must be a https URL'], ['git@git.example:org/r.git', 'must be an absolute URL'],
    ['git://git.example/r.git', 'must be a https URL'], ['ext::sh -c touch% /tmp/pwned', 'must be a https URL'], ['--upload-pack=touch /tmp/pwned', 'must be an absolute URL'],
    ['file:///etc', 'local paths are not offered'], ['/srv/repos/r.git', 'local paths are not offered'], ['https://127.0.0.1/r.git', 'does not call'],
    ['https://169.254.169.254/r.git', 'does not call'], ['https://[::1]/r.git', 'does not call'], ['https://localhost/r.git', 'does not call'],
    ['https://inside.example/r.git', 'does not call'], ['https://0x7f000001/r.git', 'does not call'],
  ])('refuses %s', async (repo, why) => {
    await expect(git.check(repo)).rejects.toThrow(GitSourceRefused);
    await expect(git.check(repo)).rejects.toThrow(why);
  });

  it('clones an https URL with `--` before it, only over https, without redirects or stored credentials, pinned to the address it checked', async () => {
    expect(await git.cloneArgv('https://git.example/org/r.git', 'main', '/w/src')).toEqual([
      'git', '-c', 'protocol.allow=never', '-c', 'protocol.https.allow=always', '-c', 'http.followRedirects=false', '-c', 'credential.helper=',
      '-c', `http.curloptResolve=git.example:443:${PUBLIC}`, 'clone', '--quiet', '--depth', '1', '--branch', 'main', '--', 'https://git.example/org/r.git', '/w/src',
    ]);
    expect(await git.cloneArgv(`https://${PUBLIC}:8443/r.git`, '-x', '/w/src')).not.toContain('http.curloptResolve');
  });

  it('does not clone a name that does not resolve just before the clone (git would resolve it itself), though it may be submitted', async () => {
    await expect(git.check('https://nowhere.example/r.git')).resolves.toBeUndefined();
    await expect(git.cloneArgv('https://nowhere.example/r.git', 'main', '/w/src')).rejects.toThrow('could not resolve nowhere.example');
  });

  it('DNS rebinding: public when submitted, 127.0.0.1 just before the clone: refused', async () => {
    let calls = 0;
    const rebinding = new GitSource(new OutboundPolicy('', async () => [{ address: calls++ === 0 ? PUBLIC : '127.0.0.1', family: 4 }]), false);
    await expect(rebinding.check('https://git.example/r.git')).resolves.toBeUndefined();
    await expect(rebinding.cloneArgv('https://git.example/r.git', 'main', '/w/src')).rejects.toThrow(GitSourceRefused);
  });

  it('local paths and file:// only when the operator allows them, and then only the file transport', async () => {
    const local = new GitSource(new OutboundPolicy(''), true);
    expect(await local.cloneArgv('/srv/r.git', 'main', '/w/src')).toEqual(['git', '-c', 'protocol.allow=never', '-c', 'protocol.file.allow=always', 'clone', '--quiet', '--depth', '1', '--branch', 'main', '--', '/srv/r.git', '/w/src']);
    await expect(local.check('file:///srv/r.git')).resolves.toBeUndefined();
    await expect(local.check('https://127.0.0.1/r.git')).rejects.toThrow(GitSourceRefused);
  });

  describe('with git itself', () => {
    let counter: ConnectionCounter;
    let port: number;
    const connections = () => counter.connections();
    beforeAll(async () => {
      counter = await startConnectionCounter();
      port = counter.port;
    });
    afterAll(() => counter.close());

    it('git connects to the pinned address, not to what it would resolve (git.test resolves nowhere here)', async () => {
      const allowed = new GitSource(new OutboundPolicy(`git.test:${port}`, resolverOf({ 'git.test': '127.0.0.1' })), false);
      const argv = await allowed.cloneArgv(`https://git.test:${port}/r.git`, 'main', '/nonexistent/never-written');
      const before = connections();
      // ls-remote with the same -c settings: no directory is written; the TLS handshake fails on the closing server.
      const configs = argv.slice(1, argv.indexOf('clone'));
      // Asynchronously: the server above runs on this event loop.
      const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = execFile('git', [...configs, 'ls-remote', '--', `https://git.test:${port}/r.git`], { timeout: 20_000, env: { PATH: process.env.PATH, GIT_TERMINAL_PROMPT: '0', HOME: '/nonexistent' } }, (_err, _out, stderr) =>
          resolve({ code: child.exitCode, stderr }),
        );
      });
      expect(r.code).not.toBe(0);
      expect(r.stderr).not.toMatch(/Could not resolve host/);
      expect(connections()).toBeGreaterThan(before);
    });

    it('git refuses other transports even if one got through', () => {
      const r = spawnSync('git', ['-c', 'protocol.allow=never', '-c', 'protocol.https.allow=always', 'ls-remote', '--', 'ext::sh -c true'], { encoding: 'utf8', timeout: 20_000 });
      expect(r.stderr).toMatch(/transport 'ext' not allowed/);
    });
  });
});
