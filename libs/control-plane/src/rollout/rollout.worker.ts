import { Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { METRICS } from '@th/platform';
import type { DeploymentRow, DeploymentRuntime, DeploymentsRepository, RevisionRow } from '../deployments/deployments.repository';
import type { ListenersRepository } from '../listeners/listeners.repository';
import type { SecretsCipher } from '../secrets.cipher';
import { sourcesOf } from './deployment-states';
import { RolloutError, RolloutInterrupted, type RolloutDriver } from './driver';

export interface RolloutWorkerOptions {
  pollMs: number;
  /** How long a shutdown waits for rollouts in flight. */
  stopGraceMs: number;
  /** Deployments handled at once (builds and server starts are heavy on one machine). */
  concurrency: number;
}

const lockKey = (id: string) => createHash('sha256').update(id).digest().readBigInt64BE(0).toString();
const message = (err: unknown) => (err instanceof RolloutError ? err.message : `internal error: ${err instanceof Error ? err.message : String(err)}`);

/**
 * Rolls deployments forward from what PostgreSQL says, so a restart resumes where a crash left off:
 * provisions new deployments, rolls the latest revision of each (superseding older unfinished ones),
 * and tears down deleted ones. One deployment is handled by one worker at a time (an advisory lock).
 */
export class RolloutWorker {
  private readonly logger = new Logger('rollout');
  private readonly inFlight = new Map<string, Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  private scanning: Promise<void> | null = null;
  private rescan = false;

  constructor(
    private readonly ds: DataSource,
    private readonly repo: DeploymentsRepository,
    private readonly listeners: ListenersRepository,
    private readonly cipher: SecretsCipher,
    private readonly drivers: { local: RolloutDriver; k8s: RolloutDriver },
    private readonly opts: RolloutWorkerOptions,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.restoreServing();
    this.kick();
  }

  /** Looks for work now (called after every write that creates some). */
  kick(): void {
    if (this.stopped) return;
    if (this.scanning) {
      this.rescan = true;
      return;
    }
    this.scanning = this.scan().finally(() => {
      this.scanning = null;
      if (this.rescan) {
        this.rescan = false;
        this.kick();
      } else this.schedule();
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), this.opts.pollMs);
    this.timer.unref();
  }

  private async scan(): Promise<void> {
    let ids: string[];
    try {
      ids = await this.repo.deploymentsNeedingWork();
    } catch (err) {
      this.logger.error({ msg: 'rollout scan failed', err: String(err) });
      return;
    }
    for (const id of ids) {
      if (this.inFlight.has(id)) continue;
      if (this.inFlight.size >= this.opts.concurrency) break; // the rest waits for the next scan
      const p = this.withLock(id, () => this.step(id))
        .catch((err: unknown) => this.logger.error({ msg: 'rollout step failed', deployment_id: id, err: String(err) }))
        .finally(() => {
          this.inFlight.delete(id);
          this.kick();
        });
      this.inFlight.set(id, p);
    }
  }

  /**
   * Runs `fn` holding the deployment's advisory lock; skips when another worker holds it. The lock lives on its
   * own connection, outside the pool: a pooled lock holder waiting for a second pooled connection could starve
   * the pool (and every HTTP request) when many deployments roll out at once.
   */
  private async withLock(id: string, fn: () => Promise<void>): Promise<void> {
    const url = (this.ds.options as { url?: string }).url;
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS locked', [lockKey(id)]);
      if (!rows[0].locked) return;
      await fn(); // the session's end releases the lock, also when the process dies
    } finally {
      await client.end();
    }
  }

  private async driverFor(d: DeploymentRow): Promise<RolloutDriver> {
    if (d.source !== 'external_docker') return this.drivers.local;
    const listener = d.source_config.listener_id ? await this.listeners.findById(d.source_config.listener_id) : null;
    if (!listener) throw new RolloutError('external_docker deployments need a listener (source_config.listener_id); this installation cannot run Docker images itself');
    return this.drivers.k8s;
  }

  private saver(d: DeploymentRow) {
    return async (runtime: DeploymentRuntime) => {
      d.runtime = runtime;
      await this.repo.updateDeployment(this.ds.manager, d.id, { runtime });
    };
  }

  /** One pass over one deployment. */
  private async step(id: string): Promise<void> {
    let d = await this.repo.findDeploymentById(id);
    if (!d) return;
    if (d.status === 'AWAITING_DELETE') {
      const driver = await this.driverFor(d).catch(() => this.drivers.local);
      await driver.teardown(d);
      await this.repo.deleteDeployment(d.id);
      return;
    }
    if (d.status === 'AWAITING_DATABASE') {
      try {
        const driver = await this.driverFor(d);
        const runtime = await driver.provision(d, this.saver(d));
        await this.repo.moveStatus(this.ds.manager, d.id, ['AWAITING_DATABASE'], 'READY', { runtime });
      } catch (err) {
        if (err instanceof RolloutInterrupted) return; // provisioned again on the next start
        await this.repo.moveStatus(this.ds.manager, d.id, ['AWAITING_DATABASE'], 'UNKNOWN', { runtime: { ...d.runtime, message: message(err) } });
        await this.failUnfinished(d, 'DEPLOY_FAILED', `the deployment could not be provisioned: ${message(err)}`);
        return;
      }
      d = await this.repo.findDeploymentById(id);
      if (!d) return;
    }
    const unfinished = await this.repo.unfinishedRevisions(d.id);
    for (const r of unfinished) {
      if (r.id !== d.latest_revision_id) {
        await this.repo.transition(this.ds.manager, r.id, ['QUEUED', 'BUILDING', 'DEPLOYING'], 'SUPERSEDED', `superseded by revision ${d.latest_revision_id ?? ''}`);
        if (d.runtime.servers?.[r.id]) await (await this.driverFor(d)).retire(d, r.id, this.saver(d));
      }
    }
    const latest = unfinished.find((r) => r.id === d?.latest_revision_id);
    if (latest) await this.rollout(d, latest);
  }

  private async failUnfinished(d: DeploymentRow, status: 'DEPLOY_FAILED', msg: string): Promise<void> {
    for (const r of await this.repo.unfinishedRevisions(d.id)) await this.repo.transition(this.ds.manager, r.id, ['QUEUED', 'BUILDING', 'DEPLOYING'], status, msg);
  }

  private async stillLatest(d: DeploymentRow, r: RevisionRow): Promise<boolean> {
    const now = await this.repo.findDeploymentById(d.id);
    if (now && now.latest_revision_id === r.id && now.status !== 'AWAITING_DELETE') return true;
    await this.repo.transition(this.ds.manager, r.id, ['QUEUED', 'BUILDING', 'DEPLOYING'], 'SUPERSEDED', `superseded by revision ${now?.latest_revision_id ?? ''}`);
    rolloutEnded(r, 'SUPERSEDED');
    return false;
  }

  private async failed(d: DeploymentRow, r: RevisionRow, status: 'BUILD_FAILED' | 'DEPLOY_FAILED', err: unknown): Promise<void> {
    if (err instanceof RolloutInterrupted) return; // the revision keeps its state and resumes on the next start
    await this.repo.transition(this.ds.manager, r.id, ['BUILDING', 'DEPLOYING'], status, message(err));
    rolloutEnded(r, status);
    // The previous revision keeps serving; with none, nothing serves this deployment.
    if (!d.active_revision_id) await this.repo.moveStatus(this.ds.manager, d.id, ['READY'], 'UNUSED');
  }

  private async rollout(d: DeploymentRow, r: RevisionRow): Promise<void> {
    const resumed = r.status !== 'QUEUED';
    await this.repo.transition(this.ds.manager, r.id, ['QUEUED', 'BUILDING', 'DEPLOYING'], 'BUILDING',
      resumed ? `resumed after a control-plane restart (was ${r.status}): building again` : 'building');
    let driver: RolloutDriver;
    let secrets;
    try {
      driver = await this.driverFor(d);
      secrets = this.cipher.openAll(r.secrets);
    } catch (err) {
      return this.failed(d, r, 'BUILD_FAILED', err);
    }
    let built;
    try {
      built = await driver.build(d, r, secrets);
    } catch (err) {
      return this.failed(d, r, 'BUILD_FAILED', err);
    }
    if (!(await this.stillLatest(d, r))) return;
    const rc = { ...r.source_revision_config, repo_commit_sha: built.repo_commit_sha ?? r.source_revision_config.repo_commit_sha ?? null };
    await this.repo.transition(this.ds.manager, r.id, ['BUILDING'], 'DEPLOYING', 'built; starting the server', { source_revision_config: rc });
    let deployed;
    try {
      deployed = await driver.deploy(d, r, secrets, this.saver(d));
    } catch (err) {
      if (!(err instanceof RolloutInterrupted)) await driver.retire(d, r.id, this.saver(d)).catch(() => undefined);
      return this.failed(d, r, 'DEPLOY_FAILED', err);
    }
    const previous = d.active_revision_id;
    const ok = await this.repo.transaction(async (tx) => {
      const cur = await this.repo.findDeploymentById(d.id, tx, true);
      if (!cur || cur.latest_revision_id !== r.id || cur.status === 'AWAITING_DELETE') return false;
      if (!(await this.repo.transition(tx, r.id, ['DEPLOYING'], 'DEPLOYED', `serving at ${deployed.url}`))) return false;
      const sourceConfig = d.source === 'external_docker' ? cur.source_config : { ...cur.source_config, custom_url: deployed.url };
      await this.repo.updateDeployment(tx, d.id, {
        active_revision_id: r.id,
        source_config: sourceConfig,
        runtime: deployed.runtime,
        ...(rc.repo_commit_sha ? { source_revision_config: { ...cur.source_revision_config, repo_commit_sha: rc.repo_commit_sha } } : {}),
      });
      await this.repo.moveStatus(tx, d.id, sourcesOf('READY'), 'READY');
      if (previous && previous !== r.id) await this.repo.transition(tx, previous, ['DEPLOYED'], 'REPLACED', `replaced by revision ${r.id}`);
      return true;
    });
    if (ok) rolloutEnded(r, 'DEPLOYED');
    if (!ok) {
      await this.stillLatest(d, r);
      await driver.retire(d, r.id, this.saver(d));
      return;
    }
    if (previous && previous !== r.id) await driver.retire(d, previous, this.saver(d));
  }

  /** After a restart: the drivers bring back what the active revisions served. */
  private async restoreServing(): Promise<void> {
    for (const d of await this.repo.deploymentsServing()) {
      const r = d.active_revision_id ? await this.repo.findRevisionById(d.active_revision_id) : null;
      if (!r) continue;
      try {
        const driver = await this.driverFor(d);
        await driver.restore(d, r, this.cipher.openAll(r.secrets), this.saver(d));
      } catch (err) {
        this.logger.error({ msg: 'could not restore a deployment', deployment_id: d.id, err: message(err) });
        await this.repo.moveStatus(this.ds.manager, d.id, ['READY'], 'UNKNOWN', { runtime: { ...d.runtime, message: message(err) } });
      }
    }
  }

  /** Stops looking for work and waits a little for the rollouts in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.scanning;
    // A rollout cut short here resumes on the next start (its state is in PostgreSQL).
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inFlight.values()]), new Promise((r) => (timer = setTimeout(r, this.opts.stopGraceMs)))]);
    clearTimeout(timer);
  }
}

/** A revision's rollout reached a final state: counted, and timed from when it was queued. */
function rolloutEnded(r: RevisionRow, state: 'DEPLOYED' | 'BUILD_FAILED' | 'DEPLOY_FAILED' | 'SUPERSEDED'): void {
  METRICS.rollouts.inc({ state });
  METRICS.rolloutDuration.observe({ state }, Math.max(0, (Date.now() - new Date(r.created_at).getTime()) / 1000));
}
