import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Workspace secret values are sealed (AES-256-GCM, the shared SecretCipher) from here on. Rows stored
 * before hold their value in plain text with `sealed` false: the gateway seals them at start
 * (WorkspaceSecretsService.sealPlaintextSecrets), since the key is not the database's to know.
 */
export class WorkspaceSecretsSealed1732250000003 implements MigrationInterface {
  name = 'WorkspaceSecretsSealed1732250000003';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "gateway"."workspace_secrets" ADD COLUMN IF NOT EXISTS "sealed" boolean NOT NULL DEFAULT false`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "gateway"."workspace_secrets" DROP COLUMN IF EXISTS "sealed"`);
  }
}
