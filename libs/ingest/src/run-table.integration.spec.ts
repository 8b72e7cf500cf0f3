import { RUN_COLUMNS } from '@th/contracts';
import { suiteClickHouse } from '@th/testing';

/**
 * The runs table the ClickHouse migrations create against its registry (RUN_FIELDS in contracts), on
 * the engine (chDB): every column the registry declares exists with its type, and the table has no
 * column the registry does not declare. Order is not compared: every insert names its columns.
 */
describe('the runs table registry against the migrations (chDB)', () => {
  const ch = suiteClickHouse('run-table');

  const columnsOf = async (table: string): Promise<Record<string, string>> => {
    const rows = await ch().query<{ name: string; type: string }>(
      'SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = {t:String} ORDER BY position',
      { t: table },
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.type]));
  };
  const registry = Object.fromEntries(RUN_COLUMNS.map((c) => [c.name, c.def.type]));

  /** What differs between a table and the registry: columns only on one side, types that disagree. */
  const drift = (table: Record<string, string>) => ({
    missing_in_table: Object.keys(registry).filter((c) => !(c in table)),
    missing_in_registry: Object.keys(table).filter((c) => !(c in registry)),
    types: Object.keys(registry)
      .filter((c) => c in table && table[c] !== registry[c])
      .map((c) => `${c}: table ${table[c]}, registry ${registry[c]}`),
  });

  it('declares every column of the migrated runs table with its type, and no other', async () => {
    const table = await columnsOf('runs');
    expect(Object.keys(table).length).toBeGreaterThan(30);
    expect(drift(table)).toEqual({ missing_in_table: [], missing_in_registry: [], types: [] });
  });

  it('reports a column added by a migration but not to the registry, and a type changed', async () => {
    await ch().command('CREATE TABLE IF NOT EXISTS runs_drift AS runs');
    await ch().command("ALTER TABLE runs_drift ADD COLUMN IF NOT EXISTS scratch String DEFAULT ''");
    await ch().command('ALTER TABLE runs_drift MODIFY COLUMN name LowCardinality(String)');
    expect(drift(await columnsOf('runs_drift'))).toEqual({
      missing_in_table: [],
      missing_in_registry: ['scratch'],
      types: ['name: table LowCardinality(String), registry String'],
    });
  });
});
