import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Chains are keyed (HMAC under AUDIT_CHAIN_KEY) from here on. Events stored before keep their plain
 * SHA-256 hashes until rekeyUnkeyedChains converts them (the key is not the database's, so no SQL
 * migration can): the append-only trigger lets UPDATE through only inside that job's transaction
 * (SET LOCAL audit.rekey = 'on'), as it lets DELETE through for retention.
 */
export class AuditRekey1732250000061 implements MigrationInterface {
  name = 'AuditRekey1732250000061';
  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE OR REPLACE FUNCTION "audit"."refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('audit.retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        IF TG_OP = 'UPDATE' AND current_setting('audit.rekey', true) = 'on' THEN
          RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit.events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
  }
  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE OR REPLACE FUNCTION "audit"."refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'DELETE' AND current_setting('audit.retention', true) = 'on' THEN
          RETURN OLD;
        END IF;
        RAISE EXCEPTION 'audit.events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
      END $$`);
  }
}
