export * from './clickhouse.client';
export * from './migrator';
export * from './clickhouse.module';
