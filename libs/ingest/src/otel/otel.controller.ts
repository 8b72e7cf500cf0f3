import { Body, Controller, Headers, HttpCode, Post, Req, StreamableFile } from '@nestjs/common';
import type { Identity } from '@th/contracts';
import { CurrentIdentity } from '@th/auth';
import type { RawBodyRequest } from '@th/platform';
import { OtelService, otlpEncodingOf } from './otel.service';

/** `/otel/v1/traces`, and `/otel`: the Python SDK's OTEL mode gives its exporter `<endpoint>/otel` as the full URL. */
@Controller('otel')
export class OtelController {
  constructor(private readonly otel: OtelService) {}

  @Post(['v1/traces', ''])
  @HttpCode(200)
  async traces(
    @CurrentIdentity() identity: Identity,
    @Req() req: RawBodyRequest,
    @Body() body: unknown,
    @Headers('langsmith-project') project?: string,
  ): Promise<StreamableFile | Record<string, unknown>> {
    const encoding = otlpEncodingOf(req.headers['content-type']);
    const out = await this.otel.traces(identity, encoding, req.rawBody, body, project || undefined);
    return Buffer.isBuffer(out) ? new StreamableFile(out, { type: 'application/x-protobuf' }) : out;
  }
}
