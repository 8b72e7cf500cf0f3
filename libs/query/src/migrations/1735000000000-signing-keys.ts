import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The key that signs run attachments' download URLs (`s3_urls`), made once per database: every query replica signs alike. */
export class SigningKeys1735000000000 implements MigrationInterface {
  name = 'SigningKeys1735000000000';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS "query"."signing_keys" ("purpose" text PRIMARY KEY, "key" text NOT NULL)`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS "query"."signing_keys"`);
  }
}
