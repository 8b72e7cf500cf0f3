import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The prompt hub: a workspace's hub handle, its repos (prompts), every commit of a repo (manifests kept as the
 * client's JSON text, so they come back as sent), commit tags, and likes (one per liker and repo).
 */
export class PromptHub1735000000000 implements MigrationInterface {
  name = 'PromptHub1735000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."handles" (
      "tenant_id" uuid PRIMARY KEY,
      "handle" text NOT NULL UNIQUE,
      "created_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."repos" (
      "id" uuid PRIMARY KEY,
      "tenant_id" uuid NOT NULL,
      "repo_handle" text NOT NULL,
      "description" text,
      "readme" text,
      "tags" text[] NOT NULL DEFAULT '{}',
      "is_public" boolean NOT NULL DEFAULT false,
      "is_archived" boolean NOT NULL DEFAULT false,
      "num_likes" integer NOT NULL DEFAULT 0,
      "num_downloads" integer NOT NULL DEFAULT 0,
      "num_views" integer NOT NULL DEFAULT 0,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "repos_tenant_handle" ON "prompt_hub"."repos" ("tenant_id", "repo_handle")`);
    await q.query(`CREATE INDEX IF NOT EXISTS "repos_public" ON "prompt_hub"."repos" ("updated_at") WHERE "is_public"`);
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."commits" (
      "seq" bigserial PRIMARY KEY,
      "id" uuid NOT NULL UNIQUE,
      "repo_id" uuid NOT NULL REFERENCES "prompt_hub"."repos" ("id") ON DELETE CASCADE,
      "tenant_id" uuid NOT NULL,
      "commit_hash" text NOT NULL,
      "parent_id" uuid,
      "parent_commit_hash" text,
      "manifest" text NOT NULL,
      "description" text,
      "num_downloads" integer NOT NULL DEFAULT 0,
      "num_views" integer NOT NULL DEFAULT 0,
      "created_at" timestamptz NOT NULL
    )`);
    await q.query(`CREATE UNIQUE INDEX IF NOT EXISTS "commits_repo_hash" ON "prompt_hub"."commits" ("repo_id", "commit_hash" text_pattern_ops)`);
    await q.query(`CREATE INDEX IF NOT EXISTS "commits_repo_seq" ON "prompt_hub"."commits" ("repo_id", "seq")`);
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."commit_tags" (
      "id" uuid NOT NULL UNIQUE,
      "repo_id" uuid NOT NULL REFERENCES "prompt_hub"."repos" ("id") ON DELETE CASCADE,
      "tag_name" text NOT NULL,
      "commit_id" uuid NOT NULL REFERENCES "prompt_hub"."commits" ("id") ON DELETE CASCADE,
      "created_at" timestamptz NOT NULL,
      "updated_at" timestamptz NOT NULL,
      PRIMARY KEY ("repo_id", "tag_name")
    )`);
    await q.query(`CREATE TABLE IF NOT EXISTS "prompt_hub"."likes" (
      "repo_id" uuid NOT NULL REFERENCES "prompt_hub"."repos" ("id") ON DELETE CASCADE,
      "liker" text NOT NULL,
      "created_at" timestamptz NOT NULL,
      PRIMARY KEY ("repo_id", "liker")
    )`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."likes"`);
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."commit_tags"`);
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."commits"`);
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."repos"`);
    await q.query(`DROP TABLE IF EXISTS "prompt_hub"."handles"`);
  }
}
