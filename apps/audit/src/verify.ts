import 'reflect-metadata';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS, AuditRepository, ChainHasher, rekeyUnkeyedChains, verifyChains } from '@th/audit';
import { loadConfig } from '@th/config';
import { openServiceDataSource } from '@th/database';
import { auditVerifyConfigSchema } from './config';

/**
 * node scripts/run.js apps/audit/src/verify.js [--rekey-unkeyed] [organization_id ...]
 * Verifies the audit hash chains (all of them, or the named organizations') against DATABASE_URL with
 * AUDIT_CHAIN_KEY, prints one JSON line per chain, and exits 1 when any chain is broken.
 * --rekey-unkeyed first converts chains stored before chain keys (once, after the upgrade; see
 * rekeyUnkeyedChains) and prints one JSON line per converted or broken chain.
 */
async function main(): Promise<number> {
  const config = loadConfig(auditVerifyConfigSchema, process.env);
  const args = process.argv.slice(2);
  const rekey = args.includes('--rekey-unkeyed');
  const db = await openServiceDataSource({ url: config.DATABASE_URL, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS, poolSize: 2 });
  try {
    const repo = new AuditRepository(db);
    const hasher = new ChainHasher(config.AUDIT_CHAIN_KEY);
    if (rekey) {
      for (const r of await rekeyUnkeyedChains(repo, hasher)) {
        if (r.outcome !== 'keyed') process.stdout.write(JSON.stringify({ rekey: r.outcome, organization_id: r.chain_key || null, events: r.events }) + '\n');
      }
    }
    const reports = await verifyChains(repo, hasher, args.filter((a) => a !== '--rekey-unkeyed'));
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
