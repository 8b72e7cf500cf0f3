import 'reflect-metadata';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS, AuditRepository, verifyChains } from '@th/audit';
import { loadConfig } from '@th/config';
import { openServiceDataSource } from '@th/database';
import { auditVerifyConfigSchema } from './config';

/**
 * node scripts/run.js apps/audit/src/verify.js [organization_id ...]
 * Verifies the audit hash chains (all of them, or the named organizations') against DATABASE_URL,
 * prints one JSON line per chain, and exits 1 when any chain is broken.
 */
async function main(): Promise<number> {
  const config = loadConfig(auditVerifyConfigSchema, process.env);
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS, poolSize: 1 });
  try {
    const reports = await verifyChains(new AuditRepository(db), process.argv.slice(2));
    for (const { chain_key, ...report } of reports) process.stdout.write(JSON.stringify({ organization_id: chain_key || null, ...report }) + '\n');
    return reports.some((r) => !r.ok) ? 1 : 0;
  } finally {
    await db.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(2);
  },
);
