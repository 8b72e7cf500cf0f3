import { Controller, Get, HttpCode, Param, Post, Req } from '@nestjs/common';
import { gitPushEventSchema, type GitHostInstall, type Identity } from '@th/contracts';
import { CurrentIdentity, Public } from '@th/auth';
import { parseOrThrow, requestBaseUrl, type RawBodyRequest } from '@th/platform';
import { z } from 'zod';
import { uuid } from '@th/contracts';
import { IntegrationsService } from './integrations.service';

@Controller('v1/integrations/git_host')
export class IntegrationsController {
  constructor(private readonly integrations: IntegrationsService) {}

  @Get('install')
  install(@CurrentIdentity() identity: Identity, @Req() req: RawBodyRequest): Promise<GitHostInstall> {
    return this.integrations.install(identity, requestBaseUrl(req));
  }

  /** Push webhook: authenticated by its HMAC signature, not by an API key. */
  @Post(':integration_id/webhook')
  @Public()
  @HttpCode(200)
  push(@Param() params: unknown, @Req() req: RawBodyRequest) {
    const { integration_id } = parseOrThrow(z.object({ integration_id: uuid }), params, ['path']);
    const event = parseOrThrow(gitPushEventSchema, req.body, ['body']);
    const sig = req.headers['x-hub-signature-256'];
    return this.integrations.push(integration_id, req.rawBody ?? Buffer.alloc(0), typeof sig === 'string' ? sig : undefined, event);
  }
}
