import type { DeploymentStatus } from '@th/contracts';

/**
 * The deployment state machine (the spec names the states, not the transitions):
 * - AWAITING_DATABASE → READY when the driver has provisioned the deployment's database, → UNKNOWN when it could not.
 * - READY → UNUSED when the latest rollout failed and no revision serves; UNUSED → READY when a revision is DEPLOYED.
 * - UNKNOWN → READY when a revision is DEPLOYED (e.g. after a PATCH); READY → UNKNOWN when the active revision
 *   could not be brought back after a control-plane restart.
 * - every state but AWAITING_DELETE → AWAITING_DELETE on DELETE; the deployment row goes away once the driver freed
 *   what the deployment held.
 */
export const DEPLOYMENT_TRANSITIONS: Record<DeploymentStatus, DeploymentStatus[]> = {
  AWAITING_DATABASE: ['READY', 'UNKNOWN', 'AWAITING_DELETE'],
  READY: ['UNUSED', 'UNKNOWN', 'AWAITING_DELETE'],
  UNUSED: ['READY', 'AWAITING_DELETE'],
  UNKNOWN: ['READY', 'AWAITING_DELETE'],
  AWAITING_DELETE: [],
};

/** The states a deployment may move to `to` from. */
export function sourcesOf(to: DeploymentStatus): DeploymentStatus[] {
  return (Object.keys(DEPLOYMENT_TRANSITIONS) as DeploymentStatus[]).filter((from) => DEPLOYMENT_TRANSITIONS[from].includes(to));
}
