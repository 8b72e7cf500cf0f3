import type { Installation } from './deployments/deployment-rules';

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
  local: {
    workDir: string;
    databaseAdminUrl: string;
    agentServerCommand: string[];
    agentServerEnv: Record<string, string>;
    baseEnv: Record<string, string>;
    /** Listen address of the per-deployment front proxies. */
    host: string;
    /** Host name used in the deployment URLs. */
    publicHost: string;
    buildTimeoutMs: number;
    deployTimeoutMs: number;
  };
  k8s: {
    /** Time a k8s rollout may take to become available. */
    readyTimeoutMs: number;
  };
}
