import { Controller, Get, Inject } from '@nestjs/common';
import type { Info } from '@th/contracts';
import { Public } from '@th/auth';

export interface GatewayInfoOptions {
  version: string;
  maxBodyBytes: number;
  batchSizeLimit: number;
}
export const GATEWAY_INFO_OPTIONS = Symbol('GATEWAY_INFO_OPTIONS');

/** What the published SDK reads to choose batching, multipart and compression. */
@Controller()
export class InfoController {
  constructor(@Inject(GATEWAY_INFO_OPTIONS) private readonly opts: GatewayInfoOptions) {}

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
      // Version-gated features this installation offers (see the README's Versioning section).
      features: { scheduled_exports: false, export_fields: false, audit_logs: false },
    };
  }

  @Get('ok')
  @Public()
  ok(): { ok: true } {
    return { ok: true };
  }
}
