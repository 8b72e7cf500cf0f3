import { randomUUID } from 'node:crypto';
import type { ModelPriceMap } from '@th/contracts';
import { suiteClickHouse } from '@th/testing';
import { PriceMapCache, PriceMapRepository } from './price-map.repository';

/** The writer's in-memory price maps (standalone), on the real engine. */
describe('price-map cache', () => {
  const engine = suiteClickHouse('price-cache');

  const entry = (tenant: string, prompt_cost: number): ModelPriceMap & { tenant_id: string } => {
    const t = new Date().toISOString();
    return {
      id: randomUUID(),
      tenant_id: tenant,
      name: 'house model',
      match_pattern: '^house-1$',
      provider: null,
      prompt_cost,
      completion_cost: 0.002,
      prompt_cost_details: null,
      completion_cost_details: null,
      start_time: null,
      match_path: [],
      created_at: t,
      modified_at: t,
    };
  };

  it('reads a workspace once, and again after a write through any repository of the process has landed', async () => {
    const repo = new PriceMapRepository(engine());
    const reads = jest.spyOn(repo, 'listForTenants');
    const cache = new PriceMapCache(repo);
    const [a, b] = [randomUUID(), randomUUID()];
    await repo.put(entry(a, 0.001));
    expect((await cache.listForTenants([a])).get(a)?.map((p) => p.prompt_cost)).toEqual([0.001]);
    expect((await cache.listForTenants([a, b])).get(b)).toEqual([]);
    expect((await cache.listForTenants([a, b])).get(a)).toHaveLength(1);
    expect(reads.mock.calls.map((c) => c[0])).toEqual([[a], [b]]); // the third read came from memory
    // another repository instance (another module of the same process) writes a new map
    await new PriceMapRepository(engine()).put(entry(b, 0.5));
    expect((await cache.listForTenants([a, b])).get(b)?.map((p) => p.prompt_cost)).toEqual([0.5]);
    expect(reads).toHaveBeenCalledTimes(3);
  });

  it('a read that a write overtook is used once but not kept', async () => {
    const repo = new PriceMapRepository(engine());
    const cache = new PriceMapCache(repo);
    const tenant = randomUUID();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let readDone!: () => void;
    const didRead = new Promise<void>((r) => (readDone = r));
    const real = repo.listForTenants.bind(repo);
    const reads = jest.spyOn(repo, 'listForTenants').mockImplementationOnce(async (tenants) => {
      const answer = await real(tenants); // read before the write lands
      readDone();
      await gate;
      return answer;
    });
    const stale = cache.listForTenants([tenant]);
    await didRead;
    await repo.put(entry(tenant, 0.7));
    release();
    expect((await stale).get(tenant)).toEqual([]);
    // the next batch reads again and sees the new map
    expect((await cache.listForTenants([tenant])).get(tenant)?.map((p) => p.prompt_cost)).toEqual([0.7]);
    expect(reads).toHaveBeenCalledTimes(2);
  });
});
