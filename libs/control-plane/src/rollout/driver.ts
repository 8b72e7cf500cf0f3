import type { Secret } from '@th/contracts';
import type { DeploymentRow, DeploymentRuntime, RevisionRow } from '../deployments/deployments.repository';

/** A failure of one rollout step, with a message for the revision's history. */
export class RolloutError extends Error {}

/** A step cut short because the driver is closing: the revision keeps its state and resumes on the next start. */
export class RolloutInterrupted extends Error {}

export interface BuildResult {
  repo_commit_sha?: string | null;
}

export interface DeployResult {
  url: string;
  runtime: DeploymentRuntime;
}

/** Persists a driver's runtime state as soon as it changes (a crash must not lose a started server's pid). */
export type SaveRuntime = (runtime: DeploymentRuntime) => Promise<void>;

/**
 * One way of running deployments. The rollout worker calls these in order and records every transition;
 * a driver only does the work and throws RolloutError with a readable message when a step fails.
 */
export interface RolloutDriver {
  readonly name: string;
  /** AWAITING_DATABASE → READY: the deployment's own database (and anything else it holds for its lifetime). */
  provision(d: DeploymentRow, save: SaveRuntime): Promise<DeploymentRuntime>;
  build(d: DeploymentRow, r: RevisionRow, secrets: Secret[]): Promise<BuildResult>;
  /** Starts the revision, waits until it is healthy, then sends the deployment's traffic to it. */
  deploy(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeployResult>;
  /** Stops what an unfinished or replaced revision started. */
  retire(d: DeploymentRow, revisionId: string, save: SaveRuntime): Promise<void>;
  /** After a control-plane restart: brings the active revision back (or confirms it still runs). */
  restore(d: DeploymentRow, r: RevisionRow, secrets: Secret[], save: SaveRuntime): Promise<DeploymentRuntime>;
  /** AWAITING_DELETE: frees everything the deployment held. */
  teardown(d: DeploymentRow): Promise<void>;
  /** Stops in-process resources on shutdown (servers keep the deployments' data). */
  close(): Promise<void>;
}
