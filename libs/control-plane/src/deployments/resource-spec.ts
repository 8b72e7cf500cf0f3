import type { ResourceSpec, ResourceSpecInput } from '@th/contracts';

/** Values this installation uses when a request leaves a base value out (the spec states only derived defaults). */
export const RESOURCE_BASE_DEFAULTS = {
  min_scale: 1,
  max_scale: 1,
  cpu: 1,
  memory_mb: 1024,
  cache_cpu: 0.5,
  cache_memory_mb: 256,
  db_cpu: 0.5,
  db_memory_mb: 512,
  db_storage_gi: 10,
  db_max_connections: 100,
} as const;

const round1 = (v: number) => Math.round(v * 10) / 10;
const pick = <T>(...vals: (T | null | undefined)[]): T => vals.find((v) => v !== null && v !== undefined) as T;

/**
 * Applies the spec's default rules: limits are twice the request (cache memory once), queue_* values
 * default to the main ones. `previous` is not merged: on PATCH a resource_spec overwrites the old one.
 */
export function resolveResourceSpec(input: ResourceSpecInput | null | undefined): ResourceSpec {
  const s = input ?? {};
  const cpu = pick(s.cpu, RESOURCE_BASE_DEFAULTS.cpu);
  const memory = pick(s.memory_mb, RESOURCE_BASE_DEFAULTS.memory_mb);
  const minScale = pick(s.min_scale, RESOURCE_BASE_DEFAULTS.min_scale);
  const maxScale = pick(s.max_scale, Math.max(minScale, RESOURCE_BASE_DEFAULTS.max_scale));
  const queueCpu = pick(s.queue_cpu, cpu);
  const queueMemory = pick(s.queue_memory_mb, memory);
  const queueMin = pick(s.queue_min_scale, minScale);
  const cacheCpu = pick(s.cache_cpu, RESOURCE_BASE_DEFAULTS.cache_cpu);
  const cacheMemory = pick(s.cache_memory_mb, RESOURCE_BASE_DEFAULTS.cache_memory_mb);
  const dbCpu = pick(s.db_cpu, RESOURCE_BASE_DEFAULTS.db_cpu);
  const dbMemory = pick(s.db_memory_mb, RESOURCE_BASE_DEFAULTS.db_memory_mb);
  return {
    min_scale: minScale,
    max_scale: maxScale,
    cpu,
    cpu_limit: pick(s.cpu_limit, round1(cpu * 2)),
    memory_mb: memory,
    memory_limit_mb: pick(s.memory_limit_mb, memory * 2),
    queue_min_scale: queueMin,
    queue_max_scale: pick(s.queue_max_scale, Math.max(queueMin, maxScale)),
    queue_cpu: queueCpu,
    queue_cpu_limit: pick(s.queue_cpu_limit, round1(queueCpu * 2)),
    queue_memory_mb: queueMemory,
    queue_memory_limit_mb: pick(s.queue_memory_limit_mb, queueMemory * 2),
    cache_cpu: cacheCpu,
    cache_cpu_limit: pick(s.cache_cpu_limit, round1(cacheCpu * 2)),
    cache_memory_mb: cacheMemory,
    cache_memory_limit_mb: pick(s.cache_memory_limit_mb, cacheMemory),
    labels: s.labels ?? {},
    annotations: s.annotations ?? {},
    service_account_name: s.service_account_name ?? null,
    image_pull_secrets: s.image_pull_secrets ?? [],
    volumes: s.volumes ?? [],
    volume_mounts: s.volume_mounts ?? [],
    init_containers: s.init_containers ?? [],
    sidecars: s.sidecars ?? [],
    db_cpu: dbCpu,
    db_cpu_limit: pick(s.db_cpu_limit, round1(dbCpu * 2)),
    db_memory_mb: dbMemory,
    db_memory_limit_mb: pick(s.db_memory_limit_mb, dbMemory * 2),
    db_storage_gi: pick(s.db_storage_gi, RESOURCE_BASE_DEFAULTS.db_storage_gi),
    db_max_connections: pick(s.db_max_connections, RESOURCE_BASE_DEFAULTS.db_max_connections),
  };
}
