import { SECRET_MASK, type Deployment, type Revision } from '@th/contracts';
import type { DeploymentRow, RevisionRow } from './deployments.repository';

const iso = (d: Date | string) => new Date(d).toISOString();

/** The response form: secrets by name only, never in clear. */
export function toDeployment(r: DeploymentRow): Deployment {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    name: r.name,
    source: r.source,
    source_config: r.source_config,
    source_revision_config: r.source_revision_config,
    secrets: r.secrets.map((s) => ({ name: s.name, value: SECRET_MASK })),
    secret_references: r.secret_references,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    status: r.status,
    latest_revision_id: r.latest_revision_id,
    active_revision_id: r.active_revision_id,
    image_version: r.image_version,
  };
}

export function toRevision(r: RevisionRow): Revision {
  return {
    id: r.id,
    deployment_id: r.deployment_id,
    status: r.status,
    status_message: r.status_message,
    source_revision_config: r.source_revision_config,
    resource_spec: r.resource_spec,
    status_history: r.status_history,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}
