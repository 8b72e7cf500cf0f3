import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { ExportDestination, ExportDestinationCreate, ExportDestinationUpdate, Identity } from '@th/contracts';
import { AuditPublisher } from '@th/audit-client';
import { OutboundPolicy, maskUrlCredentials, notFound } from '@th/platform';
import { ExportsRepository, type DestinationRow } from '../exports.repository';
import { assertExportPlan } from '../plan';
import { CredentialsCipher } from '../storage/credentials-cipher';
import { objectStoreFor } from '../storage/object-store';

const RESOURCE = 'bulk_export_destination';

/** Destinations: validated against the bucket before every save; credentials stored encrypted, never answered. */
@Injectable()
export class DestinationsService {
  constructor(
    private readonly repo: ExportsRepository,
    private readonly cipher: CredentialsCipher,
    private readonly outbound: OutboundPolicy,
    @Inject(AuditPublisher) private readonly audit: AuditPublisher,
  ) {}

  create(identity: Identity, body: ExportDestinationCreate): Promise<ExportDestination> {
    return this.audit.track(
      { identity },
      async () => {
        assertExportPlan(identity);
        await this.validate(body.config, body.credentials);
        const row = await this.repo.insertDestination({
          id: randomUUID(),
          tenant_id: identity.tenant_id,
          destination_type: body.destination_type,
          display_name: body.display_name,
          bucket_name: body.config.bucket_name,
          prefix: body.config.prefix,
          region: body.config.region ?? null,
          endpoint_url: body.config.endpoint_url ?? null,
          credentials_enc: this.cipher.encrypt(body.credentials),
          credentials_keys: Object.keys(body.credentials).filter((k) => body.credentials[k as keyof typeof body.credentials]),
        });
        return present(row);
      },
      (d) => [{ type: RESOURCE, id: d.id }],
    );
  }

  get(identity: Identity, id: string): Promise<ExportDestination> {
    return this.audit.track(
      { identity, resources: [{ type: RESOURCE, id }] },
      async () => {
        assertExportPlan(identity);
        const row = await this.repo.findDestination(identity, id);
        if (!row) throw notFound(`Bulk export destination ${id}`);
        return present(row);
      },
    );
  }

  list(identity: Identity, page: { limit: number; offset: number }): Promise<ExportDestination[]> {
    return this.audit.track(
      { identity },
      async () => {
        assertExportPlan(identity);
        return (await this.repo.listDestinations(identity, page)).map(present);
      },
      (list) => list.map((d) => ({ type: RESOURCE, id: d.id })),
    );
  }

  update(identity: Identity, id: string, body: ExportDestinationUpdate): Promise<ExportDestination> {
    return this.audit.track(
      { identity, resources: [{ type: RESOURCE, id }] },
      async () => {
        assertExportPlan(identity);
        const current = await this.repo.findDestination(identity, id);
        if (!current) throw notFound(`Bulk export destination ${id}`);
        const next: DestinationRow = { ...current };
        if (body.display_name !== undefined) next.display_name = body.display_name;
        const c = body.config;
        if (c?.bucket_name !== undefined) next.bucket_name = c.bucket_name;
        if (c?.prefix !== undefined) next.prefix = c.prefix;
        if (c && 'region' in c && c.region !== undefined) next.region = c.region;
        if (c && 'endpoint_url' in c && c.endpoint_url !== undefined) next.endpoint_url = c.endpoint_url;
        const credentials = body.credentials ?? this.cipher.decrypt(current.credentials_enc);
        if (body.credentials) {
          next.credentials_enc = this.cipher.encrypt(body.credentials);
          next.credentials_keys = Object.keys(body.credentials).filter((k) => body.credentials?.[k as keyof typeof body.credentials]);
        }
        if (c || body.credentials) await this.validate({ bucket_name: next.bucket_name, prefix: next.prefix, region: next.region, endpoint_url: next.endpoint_url }, credentials);
        const saved = await this.repo.updateDestination(identity, next);
        if (!saved) throw notFound(`Bulk export destination ${id}`);
        return present(saved);
      },
    );
  }

  private async validate(config: Parameters<typeof objectStoreFor>[0], credentials: Parameters<typeof objectStoreFor>[1]): Promise<void> {
    const store = objectStoreFor(config, credentials, this.outbound);
    try {
      await store.validate();
    } finally {
      store.close();
    }
  }
}

function present(row: DestinationRow): ExportDestination {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    destination_type: row.destination_type,
    display_name: row.display_name,
    // Refused since, but rows stored before may carry user:password in the URL: never answered.
    config: { bucket_name: row.bucket_name, prefix: row.prefix, region: row.region, endpoint_url: row.endpoint_url === null ? null : maskUrlCredentials(row.endpoint_url) },
    credentials_keys: row.credentials_keys,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
