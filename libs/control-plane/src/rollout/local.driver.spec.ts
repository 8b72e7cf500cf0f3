import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { OutboundPolicy } from '@th/platform';
import type { DeploymentRow, RevisionRow } from '../deployments/deployments.repository';
import { SecretsCipher } from '../secrets.cipher';
import { UploadsRepository } from '../uploads/uploads.repository';
import { RolloutInterrupted } from './driver';
import { GitSource } from './git-source';
import { LocalDriver } from './local.driver';
import { ResolverCallers } from './deployment-callers';
import { RUN_DIR_PREFIX } from './run-dir';

/** The socket folders under the temporary directory that this process made. */
function myRunDirs(): string[] {
  return readdirSync(tmpdir())
    .filter((n) => n.startsWith(RUN_DIR_PREFIX))
    .filter((n) => {
      try {
        return (JSON.parse(readFileSync(join(tmpdir(), n, 'owner'), 'utf8')) as { pid: number }).pid === process.pid;
      } catch {
        return false;
      }
    });
}

describe('LocalDriver after close()', () => {
  const workDir = mkdtempSync(join(tmpdir(), 'local-driver-spec-'));
  afterAll(() => rmSync(workDir, { recursive: true, force: true }));

  it('refuses further rollout steps as interrupted (resumed on the next start), making no socket folder', async () => {
    const outbound = new OutboundPolicy('');
    const driver = new LocalDriver(
      {
        workDir,
        databaseAdminUrl: 'postgres://127.0.0.1:1/none',
        agentServerCommand: ['false'],
        agentServerEnv: {},
        baseEnv: {},
        sandbox: { mode: 'bwrap', uid: 65534, gid: 65534, readOnlyPaths: [] },
        stopGraceMs: 100,
        host: '127.0.0.1',
        publicHost: '127.0.0.1',
        buildTimeoutMs: 1000,
        deployTimeoutMs: 1000,
      },
      new UploadsRepository(new DataSource({ type: 'postgres' })),
      new SecretsCipher('local-driver-spec'),
      new GitSource(outbound, false),
      outbound,
      new ResolverCallers(() => null),
    );
    const before = myRunDirs();
    await driver.close();
    const d = { id: '00000000-0000-4000-8000-000000000001', runtime: {} } as DeploymentRow;
    const r = { id: '00000000-0000-4000-8000-000000000002' } as RevisionRow;
    const saved: unknown[] = [];
    await expect(driver.provision(d, async (runtime) => void saved.push(runtime))).rejects.toBeInstanceOf(RolloutInterrupted);
    expect(saved).toEqual([]);
    await expect(driver.build(d, r)).rejects.toBeInstanceOf(RolloutInterrupted);
    await expect(driver.deploy(d, r, [], async () => undefined)).rejects.toBeInstanceOf(RolloutInterrupted);
    expect(myRunDirs()).toEqual(before);
  });
});
