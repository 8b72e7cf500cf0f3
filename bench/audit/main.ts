/**
 * Audit store benchmark: appends to the hash-chained store (one transaction per organization chain,
 * head locked, idempotency check, canonical JSON, SHA-256) against the ceiling of the same rows
 * inserted as plain multi-row INSERTs into an unchained table of the same shape and indexes (no trigger), in the same run,
 * on the machine's PostgreSQL. Also times a full-chain verify and a paged read.
 *
 *   npm run build && node scripts/run.js bench/audit/main.js [--events 20000] [--batch 500] [--orgs 4] [--repeat 3]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { AuditRecord } from '@th/contracts';
import { AUDIT_ENTITIES, AUDIT_MIGRATIONS, AuditRepository, AuditStore, ChainHasher, verifyChain } from '@th/audit';
import { openServiceDataSource } from '@th/database';
import { createTestDatabase } from '@th/testing';
import { median, round } from '../lib/stats';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

function records(n: number, orgs: string[]): AuditRecord[] {
  const t0 = Date.now() - 3_600_000;
  return Array.from({ length: n }, (_, i) => ({
    id: randomUUID(),
    time: new Date(t0 + i).toISOString(),
    operation: i % 3 === 0 ? 'delete_api_key' : 'create_api_key',
    status: 'Success',
    organization_id: orgs[i % orgs.length],
    workspace_id: randomUUID(),
    user_id: randomUUID(),
    credential_id: randomUUID(),
    credential_type: 'api_key',
    resources: [{ type: 'api_key', id: randomUUID() }],
    service: 'gateway',
  }));
}

async function main(): Promise<void> {
  const events = arg('events', 20_000);
  const batch = arg('batch', 500);
  const orgCount = arg('orgs', 4);
  const repeat = arg('repeat', 3);
  const rounds: Record<string, number>[] = [];
  for (let r = 0; r < repeat; r++) {
    const db = await createTestDatabase('th_audit_bench');
    const ds = await openServiceDataSource({ url: db.url, schema: 'audit', entities: AUDIT_ENTITIES, migrations: AUDIT_MIGRATIONS });
    try {
      const repo = new AuditRepository(ds);
      const hasher = new ChainHasher(randomBytes(32).toString('hex'));
      const store = new AuditStore(repo, hasher);
      const orgs = Array.from({ length: orgCount }, () => randomUUID());
      const recs = records(events, orgs);
      // ceiling: the same rows, no chain, plain multi-row inserts of the same batch size
      await ds.query(`CREATE TABLE audit.plain (LIKE audit.events INCLUDING ALL)`);
      let t = performance.now();
      for (let i = 0; i < recs.length; i += batch) {
        const chunk = recs.slice(i, i + batch);
        const params: unknown[] = [];
        const tuples = chunk.map((x, j) => {
          params.push(x.organization_id ?? '', i + j, x.id, x.time, x.operation, x.status, x.organization_id, x.workspace_id, JSON.stringify(x), 'p', 'h');
          return `(${Array.from({ length: 11 }, (_, k) => `$${j * 11 + k + 1}`).join(',')})`;
        });
        await ds.query(
          `INSERT INTO audit.plain (chain_key, seq, id, time, operation, status, organization_id, workspace_id, record, prev_hash, hash) VALUES ${tuples.join(',')}`,
          params,
        );
      }
      const ceilingS = (performance.now() - t) / 1000;
      t = performance.now();
      for (let i = 0; i < recs.length; i += batch) await store.append(recs.slice(i, i + batch));
      const appendS = (performance.now() - t) / 1000;
      t = performance.now();
      const report = await verifyChain(repo, hasher, orgs[0]);
      const verifyS = (performance.now() - t) / 1000;
      if (!report.ok) throw new Error(`chain does not verify: ${JSON.stringify(report.first_break)}`);
      t = performance.now();
      let pages = 0;
      let after: { time: string; id: string } | undefined;
      for (;;) {
        const rows = await repo.list({ organization_id: orgs[0], notBefore: new Date(0), limit: 1000, after });
        pages++;
        if (rows.length < 1000) break;
        const last = rows[rows.length - 1];
        after = { time: last.time_key, id: last.id };
      }
      const readS = (performance.now() - t) / 1000;
      const row = {
        round: r + 1,
        events,
        append_events_per_s: round(events / appendS, 0),
        ceiling_events_per_s: round(events / ceilingS, 0),
        ratio_to_ceiling: round(ceilingS / appendS, 2),
        verify_events_per_s: round(report.events_checked / verifyS, 0),
        read_pages_of_1000: pages,
        read_events_per_s: round(report.events_checked / readS, 0),
      };
      rounds.push(row);
      process.stdout.write(JSON.stringify(row) + '\n');
    } finally {
      await ds.destroy();
      await db.drop();
    }
  }
  const med = (k: string) => median(rounds.map((x) => x[k]));
  process.stdout.write(
    JSON.stringify({
      median: true,
      append_events_per_s: med('append_events_per_s'),
      ceiling_events_per_s: med('ceiling_events_per_s'),
      ratio_to_ceiling: med('ratio_to_ceiling'),
      verify_events_per_s: med('verify_events_per_s'),
      read_events_per_s: med('read_events_per_s'),
    }) + '\n',
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
