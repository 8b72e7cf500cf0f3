import { Controller, Get } from '@nestjs/common';

@Controller()
export class HealthOkController {
  /** The control plane waits for this before marking a revision DEPLOYED: graphs loaded, database migrated. */
  @Get('ok')
  ok(): { ok: true } {
    return { ok: true };
  }
}
