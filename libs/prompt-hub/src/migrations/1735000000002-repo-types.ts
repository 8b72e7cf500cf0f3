import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A repo is a prompt, or a directory of files: an agent or a skill (the clients' push_agent / push_skill). */
export class RepoTypes1735000000002 implements MigrationInterface {
  name = 'RepoTypes1735000000002';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "prompt_hub"."repos" ADD COLUMN IF NOT EXISTS "repo_type" text NOT NULL DEFAULT 'prompt'`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE "prompt_hub"."repos" DROP COLUMN IF EXISTS "repo_type"`);
  }
}
