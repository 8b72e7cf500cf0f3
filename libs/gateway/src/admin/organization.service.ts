import { Injectable } from '@nestjs/common';
import type { Identity, Organization } from '@th/contracts';
import { assertPermissions } from '@th/auth';
import { OrganizationEntity } from '../identity/identity.entities';
import { AdminStore } from './admin-store';

/** The caller's organization. */
@Injectable()
export class OrganizationService {
  constructor(private readonly store: AdminStore) {}

  async getOrganization(identity: Identity): Promise<Organization> {
    assertPermissions(identity, ['organization:read']);
    const org = await this.store.ds.getRepository(OrganizationEntity).findOneOrFail({ where: { id: identity.organization_id } });
    return this.toOrganization(org);
  }

  async updateOrganization(identity: Identity, body: { name?: string; can_use_audit_logs?: boolean | null }): Promise<Organization> {
    assertPermissions(identity, ['organization:manage']);
    const org = await this.store.write(async (m) => {
      const o = await m.findOneOrFail(OrganizationEntity, { where: { id: identity.organization_id } });
      if (body.name !== undefined) o.name = body.name;
      if (body.can_use_audit_logs !== undefined) o.can_use_audit_logs = body.can_use_audit_logs;
      return m.save(o);
    });
    return this.toOrganization(org);
  }

  private toOrganization(o: OrganizationEntity): Organization {
    return {
      id: o.id,
      name: o.name,
      plan: o.plan,
      is_personal: o.is_personal,
      can_use_audit_logs: o.can_use_audit_logs,
      audit_logs_enabled: this.store.identities.canUseAuditLogs(o),
      created_at: o.created_at.toISOString(),
    };
  }
}
