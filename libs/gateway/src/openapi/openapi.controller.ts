import { Controller, Get, Inject } from '@nestjs/common';
import { Public } from '@th/auth';
import { buildOpenApiDocument } from './openapi.document';
import { GATEWAY_INFO_OPTIONS, type GatewayInfoOptions } from '../info.controller';

@Controller()
export class OpenApiController {
  private readonly doc: Record<string, unknown>;
  constructor(@Inject(GATEWAY_INFO_OPTIONS) opts: GatewayInfoOptions) {
    this.doc = buildOpenApiDocument(opts.version);
  }

  @Get('openapi.json')
  @Public()
  document(): Record<string, unknown> {
    return this.doc;
  }
}
