import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Prompt webhooks of a workspace. The signing secret and the extra headers are sealed (SecretCipher text form). */
export class PromptWebhooks1735000000001 implements MigrationInterface {
  name = 'PromptWebhooks1735000000001';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."webhooks" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "url" text NOT NULL,
      "include_prompts" text[],
      "exclude_prompts" text[],
      "headers_sealed" text,
      "secret_sealed" text NOT NULL,
      "triggers" text[] NOT NULL,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE INDEX IF NOT EXISTS "webhooks_tenant" ON "prompt_hub"."webhooks" ("tenant_id", "created_at")`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."webhooks"`);
  }
}
