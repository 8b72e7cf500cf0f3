import type {
  DeploymentCreateRequest,
  DeploymentPatchRequest,
  DeploymentSource,
  ResourceSpec,
  SourceConfig,
  SourceConfigRequest,
  SourceRevisionConfigRequest,
  ValidationErrorItem,
} from '@th/contracts';

/** Where this control plane runs: git_host is offered only cloud-managed, external_docker only self-hosted. */
export type Installation = 'cloud' | 'self_hosted';

type Loc = (string | number)[];
const err = (loc: Loc, msg: string, type = 'value_error'): ValidationErrorItem => ({ loc: ['body', ...loc], msg, type });
const present = (v: unknown) => v !== null && v !== undefined;

/** Which SourceConfig fields each source accepts (custom_url is read-only for the buildable sources). */
const SOURCE_CONFIG_FIELDS: Record<DeploymentSource, (keyof SourceConfigRequest)[]> = {
  git_host: ['integration_id', 'repo_url', 'deployment_type', 'build_on_push', 'install_command', 'build_command'],
  internal_source: ['install_command', 'build_command'],
  external_docker: ['custom_url', 'resource_spec', 'listener_id', 'listener_config'],
  internal_docker: [],
};
const REVISION_FIELDS: Record<DeploymentSource, (keyof SourceRevisionConfigRequest)[]> = {
  git_host: ['repo_ref', 'langgraph_config_path'],
  internal_source: ['langgraph_config_path', 'source_tarball_path'],
  external_docker: ['image_uri'],
  internal_docker: [],
};

export const isTagRef = (ref: string | null | undefined) => !!ref && ref.startsWith('refs/tags/');

function fieldsNotApplicable(source: DeploymentSource, sc: SourceConfigRequest | null | undefined, rc: SourceRevisionConfigRequest | null | undefined): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  for (const [k, v] of Object.entries(sc ?? {})) {
    if (!present(v) || SOURCE_CONFIG_FIELDS[source].includes(k as keyof SourceConfigRequest)) continue;
    const why = k === 'custom_url' && source !== 'internal_docker' ? `custom_url is set automatically for ${source} and is read-only` : `${k} is not applicable to source ${source}`;
    out.push(err(['source_config', k], why));
  }
  for (const [k, v] of Object.entries(rc ?? {})) {
    if (!present(v) || REVISION_FIELDS[source].includes(k as keyof SourceRevisionConfigRequest)) continue;
    out.push(err(['source_revision_config', k], k === 'langgraph_config_path' ? `langgraph_config_path must be null for source ${source}` : `${k} is not applicable to source ${source}`));
  }
  return out;
}

function resourceSpecRules(spec: ResourceSpec, loc: Loc): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const pairs: [keyof ResourceSpec, keyof ResourceSpec][] = [
    ['cpu', 'cpu_limit'], ['memory_mb', 'memory_limit_mb'], ['queue_cpu', 'queue_cpu_limit'], ['queue_memory_mb', 'queue_memory_limit_mb'],
    ['cache_cpu', 'cache_cpu_limit'], ['cache_memory_mb', 'cache_memory_limit_mb'], ['db_cpu', 'db_cpu_limit'], ['db_memory_mb', 'db_memory_limit_mb'],
  ];
  for (const [req, lim] of pairs) {
    if ((spec[lim] as number) < (spec[req] as number)) out.push(err([...loc, lim], `${lim} (${String(spec[lim])}) must not be below ${req} (${String(spec[req])})`));
  }
  // Defaults can push a derived limit out of bounds (e.g. queue_cpu_limit = 2 x a large queue_cpu is still <= 16, but check anyway).
  for (const lim of ['cpu_limit', 'queue_cpu_limit', 'cache_cpu_limit'] as const) {
    if (spec[lim] > 16) out.push(err([...loc, lim], `${lim} must be at most 16 cores`));
  }
  if (spec.queue_min_scale > spec.queue_max_scale) out.push(err([...loc, 'queue_min_scale'], 'queue_min_scale must not exceed queue_max_scale'));
  if (spec.min_scale > spec.max_scale) out.push(err([...loc, 'min_scale'], 'min_scale must not exceed max_scale'));
  return out;
}

/** The source-specific rules of a create request; returns every broken rule (empty when valid). */
export function createRules(req: DeploymentCreateRequest, installation: Installation, resolvedSpec: ResourceSpec | null): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const { source, source_config: sc, source_revision_config: rc } = req;
  if (source === 'internal_docker') {
    return [err(['source'], 'Source internal_docker is not offered by this installation', 'value_error')];
  }
  if (source === 'git_host' && installation !== 'cloud') out.push(err(['source'], 'Source git_host is available only for cloud-managed deployments'));
  if (source === 'external_docker' && installation !== 'self_hosted') out.push(err(['source'], 'Source external_docker is available only for self-hosted deployments'));
  out.push(...fieldsNotApplicable(source, sc, rc));
  if ((source === 'git_host' || source === 'internal_source') && !present(rc.langgraph_config_path)) {
    out.push(err(['source_revision_config', 'langgraph_config_path'], `langgraph_config_path is required for source ${source}`, 'missing'));
  }
  if (source === 'git_host') {
    if (!present(sc.integration_id)) out.push(err(['source_config', 'integration_id'], 'integration_id is required for git_host (GET /v1/integrations/git_host/install)', 'missing'));
    if (!present(sc.repo_url)) out.push(err(['source_config', 'repo_url'], 'repo_url is required for git_host', 'missing'));
    if (!present(rc.repo_ref)) out.push(err(['source_revision_config', 'repo_ref'], 'repo_ref is required for git_host', 'missing'));
    if (sc.build_on_push === true && isTagRef(rc.repo_ref)) out.push(err(['source_config', 'build_on_push'], 'build_on_push cannot be enabled when repo_ref is a tag (refs/tags/...)'));
  }
  if (source === 'external_docker') {
    if (!present(rc.image_uri)) out.push(err(['source_revision_config', 'image_uri'], 'image_uri is required for external_docker', 'missing'));
    if (present(sc.listener_config) && !present(sc.listener_id)) out.push(err(['source_config', 'listener_config'], 'listener_config needs a listener_id'));
    if (resolvedSpec) out.push(...resourceSpecRules(resolvedSpec, ['source_config', 'resource_spec']));
  }
  if (present(req.secret_references) && source !== 'external_docker') out.push(err(['secret_references'], 'secret_references are only applicable to external_docker'));
  out.push(...duplicateNames(req.secrets, ['secrets']));
  if (req.secret_references) out.push(...duplicateNames(req.secret_references, ['secret_references']));
  return out;
}

function duplicateNames(items: { name: string }[], loc: Loc): ValidationErrorItem[] {
  const seen = new Set<string>();
  const out: ValidationErrorItem[] = [];
  items.forEach((s, i) => {
    if (seen.has(s.name)) out.push(err([...loc, i, 'name'], `Duplicate name ${s.name}`));
    seen.add(s.name);
  });
  return out;
}

export interface CurrentDeployment {
  name: string;
  source: DeploymentSource;
  source_config: SourceConfig;
  source_revision_config: { repo_ref: string | null };
}

/** Rules of a PATCH against the current deployment: immutable fields, applicability, the tag rule. */
export function patchRules(req: DeploymentPatchRequest, cur: CurrentDeployment, resolvedSpec: ResourceSpec | null): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  if (present(req.name) && req.name !== cur.name) out.push(err(['name'], 'name cannot be changed'));
  if (present(req.source) && req.source !== cur.source) out.push(err(['source'], 'source cannot be changed'));
  const sc = req.source_config ?? {};
  for (const k of ['integration_id', 'repo_url', 'deployment_type', 'listener_id'] as const) {
    if (present(sc[k]) && sc[k] !== cur.source_config[k]) out.push(err(['source_config', k], `${k} cannot be changed`));
  }
  const ns = sc.listener_config?.k8s_namespace;
  if (present(ns) && ns !== (cur.source_config.listener_config?.k8s_namespace ?? null)) out.push(err(['source_config', 'listener_config', 'k8s_namespace'], 'k8s_namespace cannot be changed'));
  out.push(...fieldsNotApplicable(cur.source, req.source_config, req.source_revision_config));
  const ref = req.source_revision_config?.repo_ref ?? cur.source_revision_config.repo_ref;
  const bop = sc.build_on_push ?? cur.source_config.build_on_push;
  if (cur.source === 'git_host' && bop === true && isTagRef(ref)) {
    const loc = present(sc.build_on_push) ? ['source_config', 'build_on_push'] : ['source_revision_config', 'repo_ref'];
    out.push(err(loc, 'build_on_push cannot be enabled when repo_ref is a tag (refs/tags/...)'));
  }
  if (present(req.secret_references) && cur.source !== 'external_docker') out.push(err(['secret_references'], 'secret_references are only applicable to external_docker'));
  if (req.secrets) out.push(...duplicateNames(req.secrets, ['secrets']));
  if (req.secret_references) out.push(...duplicateNames(req.secret_references, ['secret_references']));
  if (resolvedSpec) out.push(...resourceSpecRules(resolvedSpec, ['source_config', 'resource_spec']));
  return out;
}
