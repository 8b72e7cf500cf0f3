import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { Identity, WorkspaceSecretKey } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { SecretCipher, badRequest } from '@th/platform';
import { WorkspaceSecretEntity } from '../identity/identity.entities';
import { AdminStore, workspaceOf, type AdminOptions } from './admin-store';

/** Workspace secrets, sealed at rest; values are never read back. */
@Injectable()
export class WorkspaceSecretsService implements OnModuleInit {
  private readonly cipher: SecretCipher;

  constructor(
    private readonly store: AdminStore,
    opts: AdminOptions,
  ) {
    this.cipher = new SecretCipher(opts.workspaceSecretsKey);
  }

  async onModuleInit(): Promise<void> {
    await this.sealPlaintextSecrets();
  }

  async listSecrets(identity: Identity): Promise<WorkspaceSecretKey[]> {
    assertPermissions(identity, ['workspace:manage']);
    const list = await this.store.ds.getRepository(WorkspaceSecretEntity).find({ where: { workspace_id: workspaceOf(identity) }, order: { key: 'ASC' } });
    return list.map((s) => ({ key: s.key, updated_at: s.updated_at.toISOString() }));
  }

  async updateSecrets(identity: Identity, body: { key: string; value: string | null }[]): Promise<WorkspaceSecretKey[]> {
    assertPermissions(identity, ['workspace:manage']);
    const wsId = workspaceOf(identity);
    const keys = body.map((s) => s.key);
    if (new Set(keys).size !== keys.length) throw badRequest('Each secret key may appear once');
    await this.store.write(async (m) => {
      const now = new Date();
      for (const s of body) {
        if (s.value === null) await m.delete(WorkspaceSecretEntity, { workspace_id: wsId, key: s.key });
        else await m.save(Object.assign(new WorkspaceSecretEntity(), { workspace_id: wsId, key: s.key, value: this.cipher.sealText(s.value), sealed: true, updated_at: now }));
      }
    });
    // Keys and times only: a value is never read back.
    return this.listSecrets(identity);
  }

  /**
   * Seals the values stored in plain text before sealing existed; returns how many. Replicas starting
   * together share the work (SKIP LOCKED), each row sealed once.
   */
  async sealPlaintextSecrets(): Promise<number> {
    return this.store.ds.transaction(async (m) => {
      const rows = (await m.query(
        `SELECT "workspace_id", "key", "value" FROM "gateway"."workspace_secrets" WHERE NOT "sealed" FOR UPDATE SKIP LOCKED`,
      )) as { workspace_id: string; key: string; value: string }[];
      for (const r of rows) {
        await m.update(WorkspaceSecretEntity, { workspace_id: r.workspace_id, key: r.key }, { value: this.cipher.sealText(r.value), sealed: true });
      }
      return rows.length;
    });
  }
}
