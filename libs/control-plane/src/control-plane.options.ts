import type { Installation } from './deployments/deployment-rules';
import type { LocalDriverOptions } from './rollout/local.driver';

export const CONTROL_PLANE_OPTIONS = Symbol('CONTROL_PLANE_OPTIONS');

export interface ControlPlaneOptions {
  installation: Installation;
  /** Key material for the secrets kept at rest (AES-256-GCM). */
  secretsKey: string;
  /** The control plane's public address, used in issued upload and webhook URLs; null: taken from each request. */
  publicUrl: string | null;
  /** Largest source tarball accepted by an upload URL. */
  maxTarballBytes: number;
  uploadTtlSeconds: number;
  /** Run the rollout worker in this process. */
  rolloutWorker: boolean;
  rolloutPollMs: number;
  rolloutConcurrency: number;
  local: LocalDriverOptions;
  k8s: {
    /** Time a k8s rollout may take to become available. */
    readyTimeoutMs: number;
  };
  /** How deployment addresses verify their callers' keys: through the gateway at this URL (cluster), else in process. */
  callers: { gatewayUrl: string | null };
  /** What git repositories may be cloned from (see GitSource): OUTBOUND_ALLOWED_HOSTS and GIT_ALLOW_LOCAL_REPOS. */
  outbound: { allowedHosts: string; allowLocalRepos: boolean };
}
