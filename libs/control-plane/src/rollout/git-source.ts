import { isIP } from 'node:net';
import { isAbsolute } from 'node:path';
import { OutboundRefused, type OutboundPolicy } from '@th/platform';
import { RolloutError } from './driver';

/** Why a repository URL cannot be cloned; the message is for the tenant (a 422 at submit, the revision's status at clone). */
export class GitSourceRefused extends RolloutError {}

/**
 * Which repositories the control plane clones, and how. Tenants give https URLs only, checked against the outbound
 * policy; the clone is pinned (http.curloptResolve) to the addresses just checked, so a name that resolves elsewhere
 * by then is not followed, and redirects are off. Local paths and file:// URLs (this machine's files) only when the
 * operator turned GIT_ALLOW_LOCAL_REPOS on. Every other transport (ssh, git://, ext::) is refused by git itself too.
 */
export class GitSource {
  constructor(
    private readonly outbound: OutboundPolicy,
    private readonly allowLocal: boolean,
  ) {}

  private isLocal(repo: string): boolean {
    return isAbsolute(repo) || repo.toLowerCase().startsWith('file://');
  }

  /** Throws GitSourceRefused when the URL is not one the control plane clones (a name that does not resolve yet is let through). */
  async check(repo: string): Promise<void> {
    await this.checkedConfig(repo, false);
  }

  /** `git -c` settings for cloning `repo`: the transports allowed, and for https the checked addresses it must connect to. */
  private async checkedConfig(repo: string, forClone: boolean): Promise<string[]> {
    if (this.isLocal(repo)) {
      if (!this.allowLocal) throw new GitSourceRefused('repo_url must be an https URL (local paths are not offered by this installation)');
      return ['-c', 'protocol.allow=never', '-c', 'protocol.file.allow=always'];
    }
    let target;
    try {
      target = await this.outbound.check(repo, ['https:']);
    } catch (err) {
      if (err instanceof OutboundRefused) throw new GitSourceRefused(`repo_url ${err.message}`);
      throw err;
    }
    const literal = isIP(target.host) !== 0;
    // Unpinned, git would resolve the name itself and could get another answer: no answer now, no clone.
    if (forClone && !literal && target.addresses.length === 0) throw new GitSourceRefused(`repo_url: could not resolve ${target.host}`);
    const pinned = target.addresses.map((a) => (a.family === 6 ? `[${a.address}]` : a.address)).join(',');
    return [
      '-c', 'protocol.allow=never', '-c', 'protocol.https.allow=always', '-c', 'http.followRedirects=false', '-c', 'credential.helper=',
      ...(literal ? [] : ['-c', `http.curloptResolve=${target.host}:${target.port}:${pinned}`]),
    ];
  }

  /** The argv that clones `branch` of `repo` into `dest`, checked just before (throws GitSourceRefused). */
  async cloneArgv(repo: string, branch: string, dest: string): Promise<string[]> {
    return ['git', ...(await this.checkedConfig(repo, true)), 'clone', '--quiet', '--depth', '1', '--branch', branch, '--', repo, dest];
  }
}
