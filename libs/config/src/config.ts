import { z } from 'zod';
import { queryBool } from '@th/contracts';

const SECRET = Symbol('secret');

/** Marks a config string as secret: it is redacted whenever the config is described or logged. */
export function secret<T extends z.ZodTypeAny>(schema: T): T {
  (schema as unknown as Record<symbol, boolean>)[SECRET] = true;
  return schema;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Parses the environment once at boot into a typed object, listing every problem at once. */
export function loadConfig<S extends z.ZodObject<z.ZodRawShape>>(schema: S, env: Record<string, string | undefined>): z.infer<S> {
  const cleaned: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && v !== '') cleaned[k] = v;
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`));
  }
  return result.data;
}

/** The config as a printable object, secrets replaced by '***'. */
export function describeConfig<S extends z.ZodObject<z.ZodRawShape>>(schema: S, config: z.infer<S>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config as Record<string, unknown>)) {
    const field = schema.shape[key] as unknown as Record<symbol, boolean> | undefined;
    const isSecret = !!field && (field[SECRET] || isWrappedSecret(field));
    out[key] = isSecret && value !== undefined ? '***' : value;
  }
  return out;
}

function isWrappedSecret(field: Record<symbol, boolean>): boolean {
  let cur: unknown = field;
  for (let i = 0; i < 4 && cur; i++) {
    if ((cur as Record<symbol, boolean>)[SECRET]) return true;
    const def = (cur as { def?: { innerType?: unknown } }).def;
    cur = def?.innerType;
  }
  return false;
}

export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
/** A boolean setting, written the way query parameters are (true/false, 1/0, yes/no, on/off, any case). */
export const bool = (fallback: boolean) => queryBool.default(fallback);

export const DEFAULT_SERVICE_VERSION = '0.18.0';

/**
 * The service tracing itself (docs/self-tracing.md): off unless an OTLP/HTTP endpoint is set. The standard
 * OpenTelemetry variables, read here once (the SDK's own reading of the environment is not relied on).
 */
export const selfTracingConfigShape = {
  /** Base URL of an OTLP/HTTP receiver; traces go to `<base>/v1/traces`. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  /** The traces URL itself (wins over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().url().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
  /** Headers of every export, `name=value` pairs separated by commas (URL-encoded values), e.g. `x-api-key=...`. */
  OTEL_EXPORTER_OTLP_HEADERS: secret(z.string().optional()),
  /** The spans' `service.name`; default the app's name (gateway, ingest, ...). */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
};

/** Settings every service shares. */
export const commonConfigShape = {
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /**
   * The application version /info reports. It is on the compatibility scale the spec's Versioning table and the
   * published SDK read (features gated at 0.10.109 / 0.12.42 / 0.12.33; SDK resources at 0.16–0.18), not the npm
   * package version: this release implements those features, so it reports 0.18.0.
   */
  SERVICE_VERSION: z.string().default(DEFAULT_SERVICE_VERSION),
  /** Serve Prometheus metrics on this port (unauthenticated, on HOST) instead of /metrics on the public port. */
  METRICS_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  /** On the public port, /metrics asks for `Authorization: Bearer <METRICS_TOKEN>`; unset: open (see docs/metrics.md). */
  METRICS_TOKEN: secret(z.string().min(16).optional()),
  ...selfTracingConfigShape,
};

export const kafkaConfigShape = {
  KAFKA_BROKERS: z.string().min(1),
  KAFKA_CLIENT_ID: z.string().default('tracehouse'),
  /** Put before every topic name and consumer group id on the broker, so that several installations (or test suites) can share one Kafka cluster. */
  KAFKA_PREFIX: z.string().regex(/^[A-Za-z0-9._-]*$/, 'letters, digits, dot, underscore and hyphen only').default(''),
  KAFKA_TOPIC_PARTITIONS: z.coerce.number().int().min(1).default(4),
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).default(1),
  /**
   * How long the broker waits for a consumer's heartbeat before it hands the consumer's partitions to the others:
   * after a crash, the messages of those partitions wait this long. Within the broker's group.min/max.session.timeout.ms.
   */
  KAFKA_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).max(300_000).default(30_000),
};

export const clickhouseConfigShape = {
  CLICKHOUSE_URL: z.string().url(),
  CLICKHOUSE_USER: z.string().default('default'),
  CLICKHOUSE_PASSWORD: secret(z.string().default('')),
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/).default('default'),
};

export const internalAuthShape = {
  INTERNAL_SIGNING_KEY: secret(z.string().min(16)),
};

/** What every app of the cluster form reads: the shared settings, the identity key, Kafka, and its HTTP listener (PORT is each app's own). */
export const clusterServiceConfigShape = {
  ...commonConfigShape,
  ...internalAuthShape,
  ...kafkaConfigShape,
  HOST: z.string().default('0.0.0.0'),
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(25 * 1024 * 1024),
};

/**
 * Where tenant-supplied URLs (bulk-export destinations, run webhooks, git repositories) may go although they
 * resolve to loopback, private, link-local or reserved addresses: comma-separated host names (`*.corp.example`),
 * `host:port`, IPs and CIDRs, for a private S3 or git server. Empty: public addresses only.
 */
/** The web app the standalone service and the gateway serve (`npm run build:web` writes it); empty: not served. */
export const webConfigShape = {
  WEB_DIR: z.string().default('dist/web'),
};

export const outboundConfigShape = {
  OUTBOUND_ALLOWED_HOSTS: z.string().default(''),
};
