import { DynamicModule, Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { HealthRegistry } from '@th/platform';

const POSTGRES_HEALTH = Symbol('POSTGRES_HEALTH');

/** Readiness needs PostgreSQL: `SELECT 1` through the service's own pool (a full pool makes it wait, as requests do). */
@Module({})
export class PostgresHealthModule {
  static forRoot(dataSource: DataSource): DynamicModule {
    return {
      module: PostgresHealthModule,
      providers: [
        {
          provide: POSTGRES_HEALTH,
          inject: [HealthRegistry],
          useFactory: (health: HealthRegistry) => health.register({ name: 'postgres', check: async () => void (await dataSource.query('SELECT 1')) }),
        },
      ],
    };
  }
}
