import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { ClickHouse } from './clickhouse.client';
import { spreadPartDirectories } from './part-directories';

export const CLICKHOUSE_MIGRATIONS_DIR = join(__dirname, 'migrations');

/** Applies the versioned SQL files in order, once each; safe to run from several processes. */
export async function migrateClickHouse(ch: ClickHouse, dir = CLICKHOUSE_MIGRATIONS_DIR): Promise<string[]> {
  await ch.command(
    `CREATE TABLE IF NOT EXISTS schema_migrations (version String, applied_at DateTime DEFAULT now())
     ENGINE = ReplacingMergeTree ORDER BY version`,
  );
  const done = new Set((await ch.query<{ version: string }>('SELECT version FROM schema_migrations FINAL')).map((r) => r.version));
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  const applied: string[] = [];
  for (const file of files) {
    const version = file.replace(/\.sql$/, '');
    if (done.has(version)) continue;
    const sql = readFileSync(join(dir, file), 'utf8');
    for (const statement of splitStatements(sql)) await ch.command(statement);
    await ch.command('INSERT INTO schema_migrations (version) VALUES ({v:String})', { v: version });
    applied.push(version);
  }
  // In process the engine's directories are ours: every table, new or old, gets the part placement hint.
  if (ch.target.kind === 'embedded') {
    const placed = spreadPartDirectories(ch.target.path);
    // Only a hint: the engine works without it, but say why it was not given.
    if (placed.error) new Logger('clickhouse').warn(`part placement hint (chattr +T) not applied: ${placed.error}`);
  }
  return applied;
}

function splitStatements(sql: string): string[] {
  return sql
    .split('\n')
    .filter((l) => !l.trim().startsWith('--'))
    .join('\n')
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}
