import { promises as dns, type LookupAddress } from 'node:dns';
import * as http from 'node:http';
import * as https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';

/** One address a host name resolves to. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
/** Resolves a host name to every address it has (the system resolver by default; tests inject their own). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (host) =>
  (await dns.lookup(host, { all: true, verbatim: true })).map((a: LookupAddress) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

/** Why a URL or a connection was refused; `code` lets transports tell it from network errors. */
export class OutboundRefused extends Error {
  readonly code = 'EOUTBOUNDPOLICY';
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

/** A URL the policy accepted: where it goes, and the addresses checked (empty when its name did not resolve). */
export interface OutboundTarget {
  url: URL;
  /** The host name (IPv6 without brackets), lower case. */
  host: string;
  port: number;
  addresses: ResolvedAddress[];
}

/**
 * Ranges a tenant-supplied URL may not reach: this host, private networks, link-local (cloud metadata
 * 169.254.169.254, fd00:ec2::254), carrier-grade NAT, multicast, documentation and reserved ranges.
 */
const BLOCKED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) BLOCKED.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16], ['fc00::', 7], ['fe80::', 10],
  ['fec0::', 10], ['ff00::', 8],
] as const) BLOCKED.addSubnet(net, bits, 'ipv6');

/** The 8 groups of an IPv6 address (with a trailing dotted quad), or null. */
function ipv6Groups(addr: string): number[] | null {
  let text = addr.toLowerCase().replace(/%.*$/, '');
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (quad) {
    if (isIP(quad[1]) !== 4) return null;
    const [a, b, c, d] = quad[1].split('.').map(Number);
    text = `${text.slice(0, -quad[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail, extra] = text.split('::');
  if (extra !== undefined) return null;
  const part = (s: string | undefined) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = part(head);
  const t = part(tail);
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const groups = [...h, ...new Array<number>(Math.max(fill, 0)).fill(0), ...t];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : null;
}

/** The IPv4 address an IPv6 one carries (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96). */
function embeddedIpv4(addr: string): string | null {
  const g = ipv6Groups(addr);
  if (!g) return null;
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  const mapped = zeros(5) && g[5] === 0xffff;
  const compatible = zeros(6) && (g[6] !== 0 || g[7] > 1); // not :: or ::1
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !compatible && !nat64) return null;
  return [g[6] >> 8, g[6] & 0xff, g[7] >> 8, g[7] & 0xff].join('.');
}

/** The address as the policy sees it: IPv4 carried in IPv6 is judged as the IPv4 address. */
function canonical(address: string): { address: string; type: 'ipv4' | 'ipv6' } | null {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return { address: bare, type: 'ipv4' };
  if (family !== 6) return null;
  const v4 = embeddedIpv4(bare);
  return v4 ? { address: v4, type: 'ipv4' } : { address: bare.replace(/%.*$/, ''), type: 'ipv6' };
}

/** True when the address is in a range no tenant URL may reach (anything that is not an IP address counts as blocked). */
export function isBlockedAddress(address: string): boolean {
  const c = canonical(address);
  return !c || BLOCKED.check(c.address, c.type);
}

interface HostEntry {
  /** Lower-case host name or IP; a leading '*.' matches every sub-domain. */
  host: string;
  port: number | null;
}

/**
 * The outbound policy of one process: tenant-supplied URLs (export destinations, run webhooks, git repositories)
 * may only reach public addresses, unless the operator's allow-list (OUTBOUND_ALLOWED_HOSTS) names the host,
 * host:port, IP or CIDR. Checked twice: on the URL when it is submitted (a 422 then), and on the address each
 * connection actually uses (its lookup), so a name that resolves elsewhere later (DNS rebinding) is refused too.
 */
export class OutboundPolicy {
  private readonly allowedNets = new BlockList();
  private readonly allowedHosts: HostEntry[] = [];

  constructor(
    /** Comma- or space-separated: host names (`*.corp.example`), `host:port`, IPs (`[::1]:9000`) and CIDRs. */
    allowList = '',
    private readonly resolver: Resolver = systemResolver,
    /** Bound on resolving a name for the submit-time check. */
    private readonly resolveTimeoutMs = 3000,
  ) {
    const problems: string[] = [];
    for (const entry of allowList.split(/[\s,]+/).filter(Boolean)) {
      const problem = this.addEntry(entry.toLowerCase());
      if (problem) problems.push(`'${entry}': ${problem}`);
    }
    if (problems.length) throw new Error(`OUTBOUND_ALLOWED_HOSTS: ${problems.join('; ')}`);
  }

  private addEntry(entry: string): string | null {
    const cidr = /^(.+)\/(\d{1,3})$/.exec(entry);
    if (cidr) {
      const ip = canonical(cidr[1]);
      const bits = Number(cidr[2]);
      if (!ip || isIP(cidr[1].replace(/^\[|\]$/g, '')) !== (ip.type === 'ipv4' ? 4 : 6)) return 'not a CIDR (a.b.c.d/n or v6::/n)';
      if (bits > (ip.type === 'ipv4' ? 32 : 128)) return 'prefix length too long';
      this.allowedNets.addSubnet(ip.address, bits, ip.type);
      return null;
    }
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    const withPort = /^([^:]+):(\d+)$/.exec(entry);
    const [host, portText] = bracketed ? [bracketed[1], bracketed[2]] : withPort ? [withPort[1], withPort[2]] : [entry, undefined];
    const port = portText === undefined ? null : Number(portText);
    if (port !== null && (port < 1 || port > 65535)) return 'port out of range';
    if (isIP(host)) {
      this.allowedHosts.push({ host: canonical(host)?.address ?? host, port });
      return null;
    }
    if (bracketed || !/^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*\.?$/.test(host)) return 'not a host name, host:port, IP or CIDR';
    this.allowedHosts.push({ host: host.replace(/\.$/, ''), port });
    return null;
  }

  private hostListed(host: string, port: number, address: string | null): boolean {
    const name = host.toLowerCase().replace(/\.$/, '');
    const addr = address ? (canonical(address)?.address ?? address) : null;
    return this.allowedHosts.some((e) => {
      if (e.port !== null && e.port !== port) return false;
      if (e.host === name || (addr !== null && e.host === addr)) return true;
      return e.host.startsWith('*.') && name.endsWith(e.host.slice(1));
    });
  }

  /** May a connection for `host` go to `address` on `port`? */
  allows(host: string, port: number, address: string): boolean {
    if (!isBlockedAddress(address)) return true;
    const c = canonical(address);
    if (c && this.allowedNets.check(c.address, c.type)) return true;
    return this.hostListed(host, port, address);
  }

  /**
   * Checks a submitted URL: its scheme, then every address its host resolves to. Throws OutboundRefused;
   * a name that does not resolve (now) is not refused here: its connection will fail, or be checked then.
   */
  async check(raw: string | URL, schemes: readonly string[] = ['http:', 'https:']): Promise<OutboundTarget> {
    let url: URL;
    try {
      url = typeof raw === 'string' ? new URL(raw) : raw;
    } catch {
      throw new OutboundRefused('must be an absolute URL');
    }
    if (!schemes.includes(url.protocol)) throw new OutboundRefused(`must be a ${schemes.map((s) => s.replace(/:$/, '')).join(' or ')} URL`);
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    if (!host) throw new OutboundRefused('must name a host');
    const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    // RFC 6761: *.localhost is this machine whatever a resolver says (and `localhost.` may not be in /etc/hosts).
    if (/(^|\.)localhost\.?$/.test(host) && !this.hostListed(host, port, null)) throw refusal();
    let addresses: ResolvedAddress[];
    if (isIP(host)) addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
    else {
      addresses = await withTimeout(this.resolver(host), this.resolveTimeoutMs).catch(() => []);
    }
    if (addresses.some((a) => !this.allows(host, port, a.address))) throw refusal();
    return { url, host, port, addresses };
  }

  /** A `lookup` for net/tls connections to `host:port` that fails unless every address resolved is allowed. */
  lookupFor(port: number): LookupFunction {
    return (hostname, options, callback) => {
      this.resolver(hostname).then(
        (all) => {
          const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
          if (wanted.length === 0) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 4);
          if (all.some((a) => !this.allows(hostname, port, a.address))) return callback(refusal(), '', 4);
          if (options.all) (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, wanted);
          else callback(null, wanted[0].address, wanted[0].family);
        },
        (err: NodeJS.ErrnoException) => callback(err, '', 4),
      );
    };
  }

  /** Refuses a connection to an IP literal (net skips `lookup` for those) before any packet is sent. */
  private literalRefusal(host: string | null | undefined, port: number): OutboundRefused | null {
    const bare = (host ?? '').replace(/^\[|\]$/g, '');
    return isIP(bare) && !this.allows(bare, port, bare) ? refusal() : null;
  }

  /** HTTP and HTTPS agents whose every connection goes through this policy (for node:http, fetch-less clients and the AWS SDK). */
  agents(options: http.AgentOptions = {}): { http: http.Agent; https: https.Agent } {
    const policy = this;
    const guard = <A extends http.Agent>(agent: A, base: A['createConnection'], defaultPort: number): A => {
      agent.createConnection = function createConnection(opts: http.ClientRequestArgs, cb?: (err: Error | null, s: Duplex) => void) {
        const port = Number(opts.port ?? defaultPort);
        const refused = policy.literalRefusal(opts.host ?? opts.hostname, port);
        if (refused) {
          process.nextTick(() => cb?.(refused, undefined as unknown as Duplex));
          return undefined;
        }
        return base.call(this, { ...opts, lookup: policy.lookupFor(port) }, cb);
      };
      return agent;
    };
    const h = new http.Agent(options);
    const s = new https.Agent(options);
    return { http: guard(h, http.Agent.prototype.createConnection, 80), https: guard(s, https.Agent.prototype.createConnection, 443) };
  }
}

/** The message every refusal carries: it does not say which address a name resolved to. */
function refusal(): OutboundRefused {
  return new OutboundRefused('points to an address this service does not call (loopback, private, link-local or reserved network); an operator can allow it with OUTBOUND_ALLOWED_HOSTS');
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, rej) => (timer = setTimeout(() => rej(new Error('timed out')), ms)))]).finally(() => clearTimeout(timer));
}
