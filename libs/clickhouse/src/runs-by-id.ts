/**
 * Lookups by run id go through the `runs_by_id` table (migration 0012), ordered by
 * (tenant_id, id_order, id, ...). ClickHouse cannot derive id_order from a condition on the id, so
 * every lookup states both: these helpers build that condition and its parameters.
 */
export const RUNS_BY_ID = 'runs_by_id';

const HEX16 = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}/;

/**
 * The id's first 64 bits, the table's id_order (the same value as ClickHouse's
 * toUInt64(bitShiftRight(toUInt128(id), 64))). Text that is not a UUID gets 0: its lookup still
 * fails (or finds nothing) on the id itself.
 */
export function idOrder(id: string): bigint {
  if (!HEX16.test(id)) return 0n;
  return BigInt(`0x${id.slice(0, 8)}${id.slice(9, 13)}${id.slice(14, 18)}`);
}

/** `id_order = … AND id = {<name>:UUID}` and its parameters, for one run. */
export function byIdCondition(name: string, id: string): { sql: string; params: Record<string, string | bigint> } {
  return { sql: `id_order = {${name}_order:UInt64} AND id = {${name}:UUID}`, params: { [name]: id, [`${name}_order`]: idOrder(id) } };
}

/** `id_order IN … AND id IN {<name>:Array(UUID)}` and its parameters, for several runs. */
export function byIdsCondition(name: string, ids: readonly string[]): { sql: string; params: Record<string, string[] | bigint[]> } {
  return {
    sql: `id_order IN {${name}_order:Array(UInt64)} AND id IN {${name}:Array(UUID)}`,
    params: { [name]: [...ids], [`${name}_order`]: [...new Set(ids.map(idOrder))] },
  };
}
