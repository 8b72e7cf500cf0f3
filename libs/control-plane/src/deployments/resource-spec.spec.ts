import { resourceSpecInputSchema } from '@th/contracts';
import { DEPLOYMENT_TRANSITIONS } from '../rollout/deployment-states';
import { RESOURCE_BASE_DEFAULTS, resolveResourceSpec } from './resource-spec';

describe('ResourceSpec defaults', () => {
  it('limits default to twice the request, cache memory once, queue_* to the main values', () => {
    const s = resolveResourceSpec(resourceSpecInputSchema.parse({ cpu: 2, memory_mb: 1000, min_scale: 1, max_scale: 3, cache_cpu: 0.3, cache_memory_mb: 512, db_cpu: 0.5, db_memory_mb: 256 }));
    expect(s).toMatchObject({
      cpu_limit: 4, memory_limit_mb: 2000,
      queue_cpu: 2, queue_cpu_limit: 4, queue_memory_mb: 1000, queue_memory_limit_mb: 2000, queue_min_scale: 1, queue_max_scale: 3,
      cache_cpu_limit: 0.6, cache_memory_limit_mb: 512,
      db_cpu_limit: 1, db_memory_limit_mb: 512,
    });
  });

  it('explicit limits win; an empty spec takes the base defaults', () => {
    expect(resolveResourceSpec(resourceSpecInputSchema.parse({ cpu: 1, cpu_limit: 1.5, queue_cpu: 0.4, queue_cpu_limit: 0.5 }))).toMatchObject({ cpu_limit: 1.5, queue_cpu: 0.4, queue_cpu_limit: 0.5 });
    expect(resolveResourceSpec(null)).toMatchObject({ cpu: RESOURCE_BASE_DEFAULTS.cpu, cpu_limit: RESOURCE_BASE_DEFAULTS.cpu * 2, memory_mb: RESOURCE_BASE_DEFAULTS.memory_mb });
  });

  it('CPU is rounded to one decimal before the bounds apply', () => {
    expect(resourceSpecInputSchema.parse({ cpu: 0.25, cpu_limit: 15.96 })).toMatchObject({ cpu: 0.3, cpu_limit: 16 });
    expect(resourceSpecInputSchema.safeParse({ cpu: 0.04 }).success).toBe(false);
    expect(resourceSpecInputSchema.safeParse({ cpu: 8.06 }).success).toBe(false);
    expect(resourceSpecInputSchema.safeParse({ queue_cpu_limit: 16.1 }).success).toBe(false);
  });

  it('the deployment state machine never leaves AWAITING_DELETE and reaches it from every other state', () => {
    expect(DEPLOYMENT_TRANSITIONS.AWAITING_DELETE).toEqual([]);
    for (const [from, to] of Object.entries(DEPLOYMENT_TRANSITIONS)) if (from !== 'AWAITING_DELETE') expect(to).toContain('AWAITING_DELETE');
  });
});
