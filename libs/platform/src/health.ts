import { Controller, Get, Global, Injectable, Module, Res, SetMetadata } from '@nestjs/common';
import type { Response } from 'express';

/** A readiness probe a module registers; readiness fails when any check throws. */
export interface HealthCheck {
  name: string;
  check(): Promise<void>;
}

@Injectable()
export class HealthRegistry {
  private readonly checks: HealthCheck[] = [];
  register(check: HealthCheck): void {
    this.checks.push(check);
  }
  async run(): Promise<{ ok: boolean; checks: Record<string, string> }> {
    const results = await Promise.all(
      this.checks.map(async (c) => {
        let timer: NodeJS.Timeout | undefined;
        try {
          await Promise.race([
            c.check(),
            new Promise((_, rej) => {
              timer = setTimeout(() => rej(new Error('timeout')), 5_000);
            }),
          ]);
          return [c.name, 'ok'] as const;
        } catch (err) {
          return [c.name, `error: ${(err as Error).message}`] as const;
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return { ok: results.every(([, r]) => r === 'ok'), checks: Object.fromEntries(results) };
  }
}

/** Same key the auth guard reads: health probes need no credentials. */
const PublicRoute = () => SetMetadata('th:public', true);

@Controller('health')
export class HealthController {
  constructor(private readonly registry: HealthRegistry) {}

  @Get('live')
  @PublicRoute()
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @PublicRoute()
  async ready(@Res() res: Response): Promise<void> {
    const r = await this.registry.run();
    res.status(r.ok ? 200 : 503).json({ status: r.ok ? 'ok' : 'error', checks: r.checks });
  }
}

@Global()
@Module({ controllers: [HealthController], providers: [HealthRegistry], exports: [HealthRegistry] })
export class HealthModule {}
