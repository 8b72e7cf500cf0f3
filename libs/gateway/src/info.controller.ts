import { Controller, Get, Inject } from '@nestjs/common';
import type { Info } from '@th/contracts';
import { Public } from '@th/auth';

/** The spec's Versioning table: the application version from which each gated feature exists. */
export const FEATURE_VERSION_GATES = {
  scheduled_exports: '0.10.109',
  export_fields: '0.12.42',
  audit_logs: '0.12.33',
} as const;
export type GatedFeature = keyof typeof FEATURE_VERSION_GATES;

export interface GatewayInfoOptions {
  version: string;
  maxBodyBytes: number;
  batchSizeLimit: number;
  /** Gated features whose service this installation runs (e.g. audit logs when the audit service is routed). */
  offered?: Partial<Record<GatedFeature, boolean>>;
}
export const GATEWAY_INFO_OPTIONS = Symbol('GATEWAY_INFO_OPTIONS');

/** Compares dotted numeric versions (a pre-release suffix is ignored): -1, 0 or 1. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => v.replace(/^v/, '').split(/[-+]/)[0].split('.').map((x) => Number.parseInt(x, 10) || 0);
  const pa = parse(a);
  const pb = parse(b);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/** A feature is offered when its service runs here and the application version reaches its gate. */
export function offeredFeatures(version: string, offered: GatewayInfoOptions['offered'] = {}): Record<GatedFeature, boolean> {
  const out = {} as Record<GatedFeature, boolean>;
  for (const [f, gate] of Object.entries(FEATURE_VERSION_GATES) as [GatedFeature, string][]) {
    out[f] = !!offered[f] && compareVersions(version, gate) >= 0;
  }
  return out;
}

/** What the published SDK reads to choose batching, multipart and compression. */
@Controller()
export class InfoController {
  private readonly features: Record<GatedFeature, boolean>;
  constructor(@Inject(GATEWAY_INFO_OPTIONS) private readonly opts: GatewayInfoOptions) {
    this.features = offeredFeatures(opts.version, opts.offered);
  }

  @Get('info')
  @Public()
  info(): Info {
    return {
      version: this.opts.version,
      license_expiration_time: null,
      batch_ingest_config: {
        use_multipart_endpoint: true,
        scale_up_qsize_trigger: 1000,
        scale_up_nthreads_limit: 16,
        scale_down_nempty_trigger: 4,
        size_limit: this.opts.batchSizeLimit,
        size_limit_bytes: Math.min(this.opts.maxBodyBytes, 20 * 1024 * 1024),
      },
      instance_flags: {
        dataset_examples_multipart_enabled: true,
        gzip_body_enabled: true,
        zstd_compression_enabled: true,
        ch_query_enabled: true,
        sdb_query_enabled: false,
      },
      // Version-gated features this installation offers (the spec's Versioning section).
      features: { ...this.features },
    };
  }

  @Get('ok')
  @Public()
  ok(): { ok: true } {
    return { ok: true };
  }
}
