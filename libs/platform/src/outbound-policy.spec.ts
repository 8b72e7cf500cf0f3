import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { OutboundPolicy, OutboundRefused, isBlockedAddress, type ResolvedAddress, type Resolver } from './outbound-policy';

const PUBLIC_V4 = '93.184.215.14';
const PUBLIC_V6 = '2606:2800:21f:cb07:6820:80da:af6b:8b2c';

/** A resolver with fixed answers (the seam the module offers for tests; the real one is dns.lookup). */
const fixed = (table: Record<string, string[]>): Resolver => async (host) => {
  const list = table[host];
  if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return list.map((address): ResolvedAddress => ({ address, family: address.includes(':') ? 6 : 4 }));
};

describe('isBlockedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'], ['127.255.255.254', 'loopback'], ['::1', 'loopback v6'], ['0.0.0.0', 'unspecified'], ['::', 'unspecified v6'],
    ['10.1.2.3', 'private'], ['172.16.0.1', 'private'], ['172.31.255.255', 'private'], ['192.168.1.1', 'private'], ['fc00::1', 'ULA'], ['fd12:3456::1', 'ULA'],
    ['169.254.169.254', 'cloud metadata'], ['fd00:ec2::254', 'AWS metadata v6'], ['fe80::1', 'link-local v6'], ['100.64.0.1', 'CGNAT'], ['100.127.255.255', 'CGNAT'],
    ['224.0.0.1', 'multicast'], ['ff02::1', 'multicast v6'], ['240.0.0.1', 'reserved'], ['255.255.255.255', 'broadcast'], ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'benchmarking'], ['2001:db8::1', 'documentation v6'], ['::ffff:127.0.0.1', 'IPv4-mapped loopback'], ['::ffff:7f00:1', 'IPv4-mapped, hex'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'IPv4-mapped metadata, long form'], ['::ffff:10.0.0.1', 'IPv4-mapped private'], ['::127.0.0.1', 'IPv4-compatible loopback'],
    ['64:ff9b::7f00:1', 'NAT64 of loopback'], ['2002:7f00:1::', '6to4'], ['fe80::1%eth0', 'zone id'], ['not-an-ip', 'not an address'],
  ])('%s (%s) is blocked', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each([[PUBLIC_V4], ['8.8.8.8'], ['172.32.0.1'], ['100.128.0.1'], ['11.0.0.1'], [PUBLIC_V6], ['::ffff:8.8.8.8'], ['64:ff9b::808:808']])('%s is public', (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });
});

describe('OutboundPolicy.check', () => {
  const policy = new OutboundPolicy('', fixed({ 'public.example': [PUBLIC_V4, PUBLIC_V6], 'mixed.example': [PUBLIC_V4, '10.0.0.7'], localhost: ['127.0.0.1', '::1'], 'v6only.example': ['::1'] }));

  it('accepts a public host and reports the addresses it checked', async () => {
    const t = await policy.check('https://public.example/bucket');
    expect(t).toMatchObject({ host: 'public.example', port: 443, addresses: [{ address: PUBLIC_V4, family: 4 }, { address: PUBLIC_V6, family: 6 }] });
    expect((await policy.check(`http://${PUBLIC_V4}:8080/`)).port).toBe(8080);
    expect((await policy.check(`http://[${PUBLIC_V6}]/`)).host).toBe(PUBLIC_V6);
  });

  it.each([
    'http://127.0.0.1:9000/', 'http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://[::1]/', 'http://localhost:1984/',
    'http://mixed.example/', 'http://v6only.example/', 'http://2130706433/', 'http://0x7f.1/', 'http://0x7f000001/', 'http://017700000001/', 'http://0177.0.0.1/',
    'http://127.1/', 'http://0/', 'http://[::]/', 'http://[::ffff:127.0.0.1]/', 'http://[0:0:0:0:0:ffff:169.254.169.254]/', 'http://[fe80::1]/',
    'https://user:pass@127.0.0.1/', 'http://100.100.100.200/', 'http://[fd00:ec2::254]/',
  ])('refuses %s', async (url) => {
    await expect(policy.check(url)).rejects.toThrow(OutboundRefused);
  });

  it('refuses other schemes and non-URLs, and does not say where a name resolved', async () => {
    for (const url of ['ftp://public.example/', 'file:///etc/passwd', 'gopher://public.example/', 'javascript:alert(1)', 'not a url', '/relative']) {
      await expect(policy.check(url)).rejects.toThrow(OutboundRefused);
    }
    await expect(policy.check('http://public.example/', ['https:'])).rejects.toThrow('must be a https URL');
    await expect(policy.check('http://mixed.example/')).rejects.not.toThrow('10.0.0.7');
  });

  it('resolves with the system resolver by default: localhost in any spelling is refused', async () => {
    const real = new OutboundPolicy();
    for (const url of ['http://localhost/', 'http://LOCALHOST./', 'http://localhost:9000/', 'http://app.localhost/']) await expect(real.check(url)).rejects.toThrow(OutboundRefused);
  });

  it('does not refuse a name that does not resolve (its connection is checked, or fails)', async () => {
    expect((await policy.check('https://nowhere.example/')).addresses).toEqual([]);
  });

  it('bounds the resolution in time', async () => {
    const slow = new OutboundPolicy('', () => new Promise(() => undefined), 50);
    const started = Date.now();
    expect((await slow.check('https://slow.example/')).addresses).toEqual([]);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('the allow-list (OUTBOUND_ALLOWED_HOSTS)', () => {
  const resolver = fixed({ 'minio.internal': ['10.0.0.5'], 'git.corp.example': ['192.168.1.20'], localhost: ['127.0.0.1', '::1'], 'other.internal': ['10.0.0.6'] });

  it('allows a listed host name on any port, and only that name', async () => {
    const p = new OutboundPolicy('minio.internal', resolver);
    await expect(p.check('http://minio.internal:9000/')).resolves.toMatchObject({ host: 'minio.internal' });
    await expect(p.check('http://other.internal/')).rejects.toThrow(OutboundRefused);
    await expect(p.check('http://10.0.0.5/')).rejects.toThrow(OutboundRefused);
  });

  it('allows host:port on that port only', async () => {
    const p = new OutboundPolicy('minio.internal:9000, 127.0.0.1:8080 [::1]:8081', resolver);
    await expect(p.check('http://minio.internal:9000/')).resolves.toBeDefined();
    await expect(p.check('http://minio.internal:9001/')).rejects.toThrow(OutboundRefused);
    await expect(p.check('http://127.0.0.1:8080/')).resolves.toBeDefined();
    await expect(p.check('http://127.0.0.1:8081/')).rejects.toThrow(OutboundRefused);
    await expect(p.check('http://[::1]:8081/')).resolves.toBeDefined();
  });

  it('allows an IP (also in its IPv4-mapped form) and a CIDR', async () => {
    const p = new OutboundPolicy('127.0.0.1,10.0.0.0/24,fd00::/8', resolver);
    await expect(p.check('http://127.0.0.1:1234/')).resolves.toBeDefined();
    await expect(p.check('http://[::ffff:127.0.0.1]/')).resolves.toBeDefined();
    await expect(p.check('http://other.internal/')).resolves.toBeDefined();
    await expect(p.check('http://[fd00::1]/')).resolves.toBeDefined();
    await expect(p.check('http://10.0.1.1/')).rejects.toThrow(OutboundRefused);
    await expect(p.check('http://localhost/')).rejects.toThrow(OutboundRefused); // ::1 is not listed
    await expect(p.check('http://169.254.169.254/')).rejects.toThrow(OutboundRefused);
  });

  it('allows sub-domains with *.', async () => {
    const p = new OutboundPolicy('*.corp.example', resolver);
    await expect(p.check('https://git.corp.example/repo.git')).resolves.toBeDefined();
    await expect(p.check('https://minio.internal/')).rejects.toThrow(OutboundRefused);
  });

  it('refuses a malformed list at boot, naming every bad entry', () => {
    expect(() => new OutboundPolicy('ok.example, http://x/, 10.0.0.0/99, host:70000, 1.2.3.4/x')).toThrow(
      "OUTBOUND_ALLOWED_HOSTS: 'http://x/': not a host name, host:port, IP or CIDR; '10.0.0.0/99': prefix length too long; 'host:70000': port out of range; '1.2.3.4/x': not a host name, host:port, IP or CIDR",
    );
  });
});

describe('connections through the policy agents', () => {
  let server: http.Server;
  let port: number;
  let hits = 0;
  let connections = 0;

  beforeAll(async () => {
    server = http.createServer((_req, res) => {
      hits++;
      res.end('ok');
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const get = (agent: http.Agent, url: string) =>
    new Promise<number>((resolve, reject) => {
      const req = http.get(url, { agent, timeout: 5000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });

  it('DNS rebinding: a name that resolved to a public address when checked and to 127.0.0.1 at connect time is refused, and nothing connects', async () => {
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: calls++ === 0 ? PUBLIC_V4 : '127.0.0.1', family: 4 }];
    const policy = new OutboundPolicy('', rebinding);
    const url = `http://rebind.example:${port}/hook`;
    await expect(policy.check(url)).resolves.toMatchObject({ addresses: [{ address: PUBLIC_V4 }] });
    const before = { hits, connections };
    const err = (await get(policy.agents().http, url).catch((e: unknown) => e)) as NodeJS.ErrnoException;
    expect(err).toBeInstanceOf(OutboundRefused);
    expect(err.code).toBe('EOUTBOUNDPOLICY');
    expect(calls).toBe(2); // the connection resolved again, and was judged on that answer
    expect({ hits, connections }).toEqual(before);
  });

  it('refuses an IP literal at connect time (no lookup happens for those), over http and https, before any packet', async () => {
    const { http: h, https: s } = new OutboundPolicy('', fixed({})).agents();
    const before = connections;
    await expect(get(h, `http://127.0.0.1:${port}/`)).rejects.toThrow(OutboundRefused);
    await expect(get(h, `http://[::ffff:127.0.0.1]:${port}/`)).rejects.toThrow(OutboundRefused);
    await expect(
      new Promise((resolve, reject) => https.get(`https://127.0.0.1:${port}/`, { agent: s }, resolve).on('error', reject)),
    ).rejects.toThrow(OutboundRefused);
    expect(connections).toBe(before);
  });

  it('connects where the allow-list says so, by name (every address family asked for) and by IP', async () => {
    const { http: h } = new OutboundPolicy(`127.0.0.1:${port}`, fixed({ 'hook.test': ['127.0.0.1'] })).agents();
    const before = hits;
    expect(await get(h, `http://hook.test:${port}/`)).toBe(200);
    expect(await get(h, `http://127.0.0.1:${port}/`)).toBe(200);
    expect(hits).toBe(before + 2);
    await expect(get(h, `http://127.0.0.1:${port + 1 === 65536 ? 1 : port + 1}/`)).rejects.toThrow(OutboundRefused);
  });

  it('passes resolution failures through as they are', async () => {
    const { http: h } = new OutboundPolicy('', fixed({})).agents();
    await expect(get(h, 'http://nowhere.test/')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});
