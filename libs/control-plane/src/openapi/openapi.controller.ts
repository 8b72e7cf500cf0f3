import { Controller, Get } from '@nestjs/common';
import { Public } from '@th/auth';
import { buildControlPlaneOpenApi } from './control-plane.openapi';

@Controller('v2')
export class ControlPlaneOpenApiController {
  private readonly doc = buildControlPlaneOpenApi();

  @Get('openapi.json')
  @Public()
  document(): Record<string, unknown> {
    return this.doc;
  }
}
