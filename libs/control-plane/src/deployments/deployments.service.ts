import { Inject, Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import {
  TOPICS,
  UPLOADS_PATH,
  type Deployment,
  type DeploymentCreateRequest,
  type DeploymentList,
  type DeploymentPatchRequest,
  type DeploymentStatus,
  type Identity,
  type ResourceSpec,
  type Revision,
  type RevisionList,
  type RevisionStatus,
  type SourceConfig,
  type SourceRevisionConfig,
  type UploadUrl,
  type ValidationErrorItem,
} from '@th/contracts';
import { EventBus } from '@th/bus';
import { AuditPublisher } from '@th/audit-client';
import { DomainError, ErrorCode, ValidationFailed, badRequest, notFound } from '@th/platform';
import { CONTROL_PLANE_OPTIONS, type ControlPlaneOptions } from '../control-plane.options';
import { IntegrationsRepository } from '../integrations/integrations.repository';
import { ListenersRepository } from '../listeners/listeners.repository';
import { GitSource, GitSourceRefused } from '../rollout/git-source';
import { RolloutWorkerHandle } from '../rollout/rollout-worker.handle';
import { SecretsCipher } from '../secrets.cipher';
import { UploadsRepository } from '../uploads/uploads.repository';
import { createRules, patchRules } from './deployment-rules';
import { toDeployment, toRevision } from './deployment.mapper';
import { DeploymentsRepository, type DeploymentRow, type RevisionBuild, type RevisionRow } from './deployments.repository';
import { resolveResourceSpec } from './resource-spec';
import { sourcesOf } from '../rollout/deployment-states';

const present = (v: unknown) => v !== null && v !== undefined;
const loc = (...l: (string | number)[]) => ['body', ...l];

/** Deployments and their revisions: every write is committed before it is acknowledged, then the worker is kicked. */
@Injectable()
export class DeploymentsService {
  constructor(
    private readonly repo: DeploymentsRepository,
    private readonly listeners: ListenersRepository,
    private readonly integrations: IntegrationsRepository,
    private readonly uploads: UploadsRepository,
    private readonly cipher: SecretsCipher,
    private readonly bus: EventBus,
    private readonly audit: AuditPublisher,
    private readonly worker: RolloutWorkerHandle,
    private readonly git: GitSource,
    @Inject(CONTROL_PLANE_OPTIONS) private readonly opts: ControlPlaneOptions,
  ) {}

  async create(identity: Identity, req: DeploymentCreateRequest): Promise<Deployment> {
    const created = await this.audit.track(
      { identity, details: { name: req.name, source: req.source } },
      () => this.doCreate(identity, req),
      (d) => [{ type: 'deployment', id: d.id }],
    );
    this.worker.kick();
    return created;
  }

  private async doCreate(identity: Identity, req: DeploymentCreateRequest): Promise<Deployment> {
    const scope = { tenant_id: identity.tenant_id };
    const spec = req.source === 'external_docker' && present(req.source_config.resource_spec) ? resolveResourceSpec(req.source_config.resource_spec) : null;
    const errors: ValidationErrorItem[] = createRules(req, this.opts.installation, spec);
    const sc = req.source_config;
    if (req.source === 'git_host' && present(sc.integration_id) && !(await this.integrations.find(scope, sc.integration_id as string))) {
      errors.push({ loc: loc('source_config', 'integration_id'), msg: 'Unknown integration_id (GET /v1/integrations/git_host/install)', type: 'value_error' });
    }
    if (req.source === 'git_host' && typeof sc.repo_url === 'string') {
      await this.git.check(sc.repo_url).catch((e: unknown) => {
        if (!(e instanceof GitSourceRefused)) throw e;
        errors.push({ loc: loc('source_config', 'repo_url'), msg: e.message, type: 'value_error' });
      });
    }
    let namespace: string | null = null;
    if (req.source === 'external_docker' && present(sc.listener_id)) {
      const listener = await this.listeners.find(scope, sc.listener_id as string);
      if (!listener) errors.push({ loc: loc('source_config', 'listener_id'), msg: 'Unknown listener_id (GET /v2/listeners)', type: 'value_error' });
      else {
        namespace = sc.listener_config?.k8s_namespace ?? listener.k8s_namespaces[0] ?? null;
        if (namespace && !listener.k8s_namespaces.includes(namespace)) {
          errors.push({ loc: loc('source_config', 'listener_config', 'k8s_namespace'), msg: `The listener does not deploy into namespace ${namespace}`, type: 'value_error' });
        }
      }
    }
    if (present(req.source_revision_config.source_tarball_path)) {
      // An object path is issued for an existing deployment, so none can be valid before it is created.
      errors.push({ loc: loc('source_revision_config', 'source_tarball_path'), msg: 'Must be an object path obtained from POST /deployments/{deployment_id}/upload-url for this deployment', type: 'value_error' });
    }
    if (errors.length > 0) throw new ValidationFailed(errors);

    const now = new Date();
    const id = randomUUID();
    const sourceConfig: SourceConfig = {
      integration_id: sc.integration_id ?? null,
      repo_url: sc.repo_url ?? null,
      deployment_type: req.source === 'git_host' ? (sc.deployment_type ?? 'dev') : null,
      build_on_push: req.source === 'git_host' ? (sc.build_on_push ?? false) : null,
      custom_url: sc.custom_url ?? null,
      resource_spec: spec,
      listener_id: sc.listener_id ?? null,
      listener_config: req.source === 'external_docker' && sc.listener_id ? { k8s_namespace: namespace } : null,
      install_command: sc.install_command ?? null,
      build_command: sc.build_command ?? null,
    };
    const rc = req.source_revision_config;
    const revisionConfig: SourceRevisionConfig = {
      repo_ref: rc.repo_ref ?? null,
      langgraph_config_path: rc.langgraph_config_path ?? null,
      image_uri: rc.image_uri ?? null,
      source_tarball_path: null,
      repo_commit_sha: null,
    };
    const sealed = this.cipher.sealAll(req.secrets);
    const row: DeploymentRow = {
      id,
      tenant_id: identity.tenant_id,
      name: req.name,
      source: req.source,
      source_config: sourceConfig,
      source_revision_config: revisionConfig,
      secrets: sealed,
      secret_references: req.secret_references ?? null,
      status: 'AWAITING_DATABASE',
      latest_revision_id: null,
      active_revision_id: null,
      image_version: req.image_version ?? null,
      runtime: {},
      created_at: now,
      updated_at: now,
    };
    // internal_source has nothing to roll out until a tarball is uploaded: its first revision comes with the PATCH that names it.
    const revision = req.source === 'internal_source' ? null : this.newRevision(row, revisionConfig, now, 'created with the deployment');
    if (revision) row.latest_revision_id = revision.id;
    await this.repo.transaction(async (tx) => {
      if (!(await this.repo.insertDeployment(tx, row))) throw badRequest(`A deployment named ${req.name} already exists`);
      if (revision) await this.repo.insertRevision(tx, revision);
    });
    // The query service creates the tracing project of the same name.
    await this.bus.publish(TOPICS.deployments, [
      { key: identity.tenant_id, value: { kind: 'deployment_created', tenant_id: identity.tenant_id, deployment_id: id, name: req.name, created_at: now.toISOString() } },
    ]);
    return toDeployment(row);
  }

  private newRevision(d: DeploymentRow, config: SourceRevisionConfig, now: Date, message: string): Omit<RevisionRow, 'seq'> {
    const build: RevisionBuild = {
      install_command: d.source_config.install_command,
      build_command: d.source_config.build_command,
      repo_url: d.source_config.repo_url,
      listener_id: d.source_config.listener_id,
      k8s_namespace: d.source_config.listener_config?.k8s_namespace ?? null,
      secret_references: d.secret_references,
    };
    const spec: ResourceSpec | null = d.source === 'external_docker' ? (d.source_config.resource_spec ?? resolveResourceSpec(null)) : null;
    return {
      id: randomUUID(),
      deployment_id: d.id,
      tenant_id: d.tenant_id,
      status: 'QUEUED',
      status_message: message,
      status_history: [{ status: 'QUEUED', at: now.toISOString(), message }],
      source_revision_config: { ...config, repo_commit_sha: null },
      resource_spec: spec,
      build,
      secrets: d.secrets,
      created_at: now,
      updated_at: now,
    };
  }

  async get(identity: Identity, id: string): Promise<Deployment> {
    const d = await this.repo.findDeployment({ tenant_id: identity.tenant_id }, id);
    if (!d) throw notFound('Deployment');
    return toDeployment(d);
  }

  async list(identity: Identity, q: { name?: string; name_contains?: string; status?: DeploymentStatus; limit: number; offset: number }): Promise<DeploymentList> {
    const { rows, total } = await this.repo.listDeployments({ tenant_id: identity.tenant_id }, { name: q.name, nameContains: q.name_contains, status: q.status }, q);
    return { resources: rows.map(toDeployment), offset: q.offset, limit: q.limit, total };
  }

  async update(identity: Identity, id: string, req: DeploymentPatchRequest): Promise<Deployment> {
    const updated = await this.audit.track(
      { identity, resources: [{ type: 'deployment', id }] },
      () => this.doUpdate(identity, id, req),
      (d) => [{ type: 'deployment', id: d.id }],
    );
    this.worker.kick();
    return updated;
  }

  private async doUpdate(identity: Identity, id: string, req: DeploymentPatchRequest): Promise<Deployment> {
    const scope = { tenant_id: identity.tenant_id };
    return this.repo.transaction(async (tx) => {
      const cur = await this.repo.findDeployment(scope, id, tx, true);
      if (!cur) throw notFound('Deployment');
      if (cur.status === 'AWAITING_DELETE') throw new DomainError(ErrorCode.Conflict, 'The deployment is being deleted');
      const sc = req.source_config ?? {};
      const rc = req.source_revision_config ?? {};
      const spec = present(sc.resource_spec) ? resolveResourceSpec(sc.resource_spec) : null;
      const errors = patchRules(req, cur, spec);
      if (present(rc.source_tarball_path)) {
        const up = await this.uploads.findFor(scope, id, rc.source_tarball_path as string);
        if (!up) errors.push({ loc: loc('source_revision_config', 'source_tarball_path'), msg: 'Must be an object path obtained from POST /deployments/{deployment_id}/upload-url for this deployment', type: 'value_error' });
        else if (!up.uploaded_at) errors.push({ loc: loc('source_revision_config', 'source_tarball_path'), msg: 'Nothing has been uploaded to this object path yet', type: 'value_error' });
      }
      if (errors.length > 0) throw new ValidationFailed(errors);

      const nextSc: SourceConfig = { ...cur.source_config };
      if (present(sc.build_on_push)) nextSc.build_on_push = sc.build_on_push as boolean;
      if (present(sc.custom_url)) nextSc.custom_url = sc.custom_url as string;
      if (present(sc.install_command)) nextSc.install_command = sc.install_command as string;
      if (present(sc.build_command)) nextSc.build_command = sc.build_command as string;
      if (spec) nextSc.resource_spec = spec; // overwrites, never merges
      const nextRc: SourceRevisionConfig = { ...cur.source_revision_config };
      for (const k of ['repo_ref', 'langgraph_config_path', 'image_uri', 'source_tarball_path'] as const) if (present(rc[k])) nextRc[k] = rc[k] as string;
      const next: DeploymentRow = {
        ...cur,
        source_config: nextSc,
        source_revision_config: nextRc,
        secrets: req.secrets ? this.cipher.sealAll(req.secrets) : cur.secrets,
        secret_references: req.secret_references ? req.secret_references : cur.secret_references,
        image_version: present(req.image_version) ? (req.image_version as string) : cur.image_version,
        updated_at: new Date(),
      };
      const revisionFields = [rc.repo_ref, rc.langgraph_config_path, rc.image_uri, rc.source_tarball_path, req.secrets, sc.resource_spec];
      const wantsRevision = revisionFields.some(present);
      // internal_source rolls nothing until a tarball has been named.
      const canRoll = cur.source !== 'internal_source' || present(nextRc.source_tarball_path);
      if (wantsRevision && canRoll) {
        const r = this.newRevision(next, nextRc, next.updated_at, 'created by PATCH');
        await this.repo.insertRevision(tx, r);
        next.latest_revision_id = r.id;
      }
      await this.repo.updateDeployment(tx, id, {
        source_config: next.source_config,
        source_revision_config: next.source_revision_config,
        secrets: next.secrets,
        secret_references: next.secret_references,
        image_version: next.image_version,
        latest_revision_id: next.latest_revision_id,
        updated_at: next.updated_at,
      });
      return toDeployment(next);
    });
  }

  async delete(identity: Identity, id: string): Promise<Deployment> {
    const d = await this.audit.track(
      { identity, resources: [{ type: 'deployment', id }] },
      async () => {
        const scope = { tenant_id: identity.tenant_id };
        const cur = await this.repo.findDeployment(scope, id);
        if (!cur) throw notFound('Deployment');
        if (cur.status !== 'AWAITING_DELETE' && !(await this.repo.moveStatus(this.repo.manager(), id, sourcesOf('AWAITING_DELETE'), 'AWAITING_DELETE'))) {
          throw new DomainError(ErrorCode.Conflict, 'The deployment changed meanwhile; try again');
        }
        return toDeployment({ ...cur, status: 'AWAITING_DELETE' });
      },
    );
    this.worker.kick();
    return d;
  }

  async listRevisions(identity: Identity, deploymentId: string, q: { status?: RevisionStatus; limit: number; offset: number }): Promise<RevisionList> {
    await this.get(identity, deploymentId);
    const { rows, total } = await this.repo.listRevisions({ tenant_id: identity.tenant_id }, deploymentId, { status: q.status }, q);
    return { resources: rows.map(toRevision), offset: q.offset, limit: q.limit, total };
  }

  async getRevision(identity: Identity, deploymentId: string, revisionId: string): Promise<Revision> {
    const r = await this.repo.findRevision({ tenant_id: identity.tenant_id }, deploymentId, revisionId);
    if (!r) throw notFound('Revision');
    return toRevision(r);
  }

  /** Issues an object path for a source tarball and a URL to PUT it to (signed by the path's secrecy, expiring). */
  async uploadUrl(identity: Identity, deploymentId: string, baseUrl: string): Promise<UploadUrl> {
    const d = await this.repo.findDeployment({ tenant_id: identity.tenant_id }, deploymentId);
    if (!d) throw notFound('Deployment');
    if (d.source !== 'internal_source') throw badRequest('Upload URLs are issued only for internal_source deployments');
    const now = new Date();
    const expires = new Date(now.getTime() + this.opts.uploadTtlSeconds * 1000);
    const objectPath = `deployments/${deploymentId}/sources/${randomUUID()}-${randomBytes(16).toString('hex')}.tar.gz`;
    await this.uploads.issue({ object_path: objectPath, deployment_id: deploymentId, tenant_id: identity.tenant_id, expires_at: expires, created_at: now });
    const base = (this.opts.publicUrl ?? baseUrl).replace(/\/$/, '');
    return { object_path: objectPath, upload_url: `${base}${UPLOADS_PATH}/${objectPath}`, expires_at: expires.toISOString() };
  }

  async storeUpload(objectPath: string, data: Buffer): Promise<void> {
    if (data.length === 0) throw badRequest('The upload is empty');
    if (data.length > this.opts.maxTarballBytes) throw new DomainError(ErrorCode.PayloadTooLarge, `The tarball exceeds ${this.opts.maxTarballBytes} bytes`);
    if (data[0] !== 0x1f || data[1] !== 0x8b) throw badRequest('The upload must be a gzipped tarball');
    if (!(await this.uploads.store(objectPath, data))) throw notFound('Upload URL (unknown or expired)');
  }
}
