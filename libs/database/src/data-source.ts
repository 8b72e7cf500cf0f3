import { DataSource, type EntitySchema, type MixedList } from 'typeorm';
import { instrumentPgPool, type PgPoolLike } from '@th/platform';

export interface ServiceDataSourceOptions {
  url: string;
  /** The service's own Postgres schema: a service touches no other. */
  schema: string;
  entities: MixedList<string | (new () => unknown) | EntitySchema>;
  migrations: MixedList<string | (new () => unknown)>;
  poolSize?: number;
}

/** Creates the schema if needed, connects, and runs the service's TypeORM migrations. */
export async function openServiceDataSource(opts: ServiceDataSourceOptions): Promise<DataSource> {
  const bootstrap = new DataSource({ type: 'postgres', url: opts.url });
  await bootstrap.initialize();
  await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS "${opts.schema.replace(/"/g, '')}"`);
  await bootstrap.destroy();
  const ds = new DataSource({
    type: 'postgres',
    url: opts.url,
    schema: opts.schema,
    entities: opts.entities,
    migrations: opts.migrations,
    migrationsTableName: 'migrations',
    migrationsRun: false,
    synchronize: false,
    extra: { max: opts.poolSize ?? 10 },
  });
  await ds.initialize();
  // TypeORM's postgres driver keeps its pg Pool as `master`.
  const pool = (ds.driver as unknown as { master: PgPoolLike }).master;
  const metrics = instrumentPgPool(pool);
  const destroy = ds.destroy.bind(ds);
  ds.destroy = () => {
    metrics.forget();
    return destroy();
  };
  await ds.runMigrations({ transaction: 'each' });
  return ds;
}
