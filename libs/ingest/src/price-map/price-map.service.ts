import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AuditPublisher } from '@th/audit-client';
import { microsToIso, toEpochMicros, type Identity, type ModelPriceMap, type ModelPriceMapCreate, type ModelPriceMapUpdate } from '@th/contracts';
import { DEFAULT_PRICE_MAP } from '@th/llm';
import { notFound, ValidationFailed } from '@th/platform';
import { PriceMapRepository } from './price-map.repository';

const now = (): string => microsToIso(Date.now() * 1000);
const canonicalTime = (t: string | null | undefined): string | null => {
  if (!t) return null;
  const micros = toEpochMicros(t);
  return micros === null ? null : microsToIso(micros);
};

/** Model price maps: the workspace's own entries (CRUD, audited) and the default table shipped with the service. */
@Injectable()
export class PriceMapService {
  constructor(
    private readonly repo: PriceMapRepository,
    private readonly audit: AuditPublisher,
  ) {}

  async list(identity: Identity): Promise<ModelPriceMap[]> {
    const own = (await this.repo.listForTenants([identity.tenant_id])).get(identity.tenant_id) ?? [];
    return [...own, ...DEFAULT_PRICE_MAP];
  }

  create(identity: Identity, body: ModelPriceMapCreate): Promise<ModelPriceMap> {
    return this.audit.track(
      { identity },
      async () => {
        const t = now();
        const entry = {
          id: randomUUID(),
          tenant_id: identity.tenant_id,
          name: body.name,
          match_pattern: body.match_pattern,
          provider: body.provider ?? null,
          prompt_cost: body.prompt_cost,
          completion_cost: body.completion_cost,
          prompt_cost_details: body.prompt_cost_details ?? null,
          completion_cost_details: body.completion_cost_details ?? null,
          start_time: canonicalTime(body.start_time),
          match_path: body.match_path ?? [],
          created_at: t,
          modified_at: t,
        };
        await this.repo.put(entry);
        return entry;
      },
      (e) => [{ type: 'model_price_map', id: e.id }],
    );
  }

  update(identity: Identity, id: string, body: ModelPriceMapUpdate): Promise<ModelPriceMap> {
    return this.audit.track(
      { identity, resources: [{ type: 'model_price_map', id }] },
      async () => {
        const current = await this.own(identity, id);
        const entry = {
          ...current,
          ...Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)),
          tenant_id: identity.tenant_id,
          start_time: body.start_time !== undefined ? canonicalTime(body.start_time) : current.start_time,
          modified_at: now(),
        } as ModelPriceMap & { tenant_id: string };
        await this.repo.put(entry);
        return entry;
      },
      (e) => [{ type: 'model_price_map', id: e.id }],
    );
  }

  delete(identity: Identity, id: string): Promise<void> {
    return this.audit.track({ identity, resources: [{ type: 'model_price_map', id }] }, async () => {
      const current = await this.own(identity, id);
      await this.repo.put({ ...current, tenant_id: identity.tenant_id, modified_at: now() }, true);
    });
  }

  private async own(identity: Identity, id: string): Promise<ModelPriceMap> {
    if (DEFAULT_PRICE_MAP.some((d) => d.id === id)) {
      throw new ValidationFailed([{ loc: ['path', 'id'], msg: 'Entries of the default price table cannot be changed; create a workspace entry instead', type: 'value_error' }]);
    }
    const current = await this.repo.get(identity.tenant_id, id);
    if (!current) throw notFound(`Model price map ${id}`);
    return current;
  }
}
