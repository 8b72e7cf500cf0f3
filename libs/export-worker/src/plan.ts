import type { Identity } from '@th/contracts';
import { forbidden } from '@th/platform';

/** Bulk export requires a plan of the Plus or Enterprise tier. */
export function assertExportPlan(identity: Identity): void {
  if (identity.plan !== 'plus' && identity.plan !== 'enterprise') {
    throw forbidden(`Bulk export requires a Plus or Enterprise plan; this organization is on the ${identity.plan} plan`);
  }
}
