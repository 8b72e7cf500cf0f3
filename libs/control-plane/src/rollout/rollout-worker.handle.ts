import { Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { RolloutDriver } from './driver';
import type { RolloutWorker } from './rollout.worker';

/** The rollout worker inside Nest's lifecycle: started after boot, stopped (and drivers closed) on shutdown. */
export class RolloutWorkerHandle implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('rollout');
  constructor(
    private readonly worker: RolloutWorker | null,
    private readonly drivers: RolloutDriver[],
  ) {}

  kick(): void {
    this.worker?.kick();
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.worker?.start().catch((err: unknown) => this.logger.error({ msg: 'rollout worker did not start', err: String(err) }));
  }

  async onApplicationShutdown(): Promise<void> {
    await this.worker?.stop();
    for (const d of this.drivers) await d.close();
  }
}
