export * from './clickhouse.client';
export * from './migrator';
export * from './clickhouse.module';
export * from './runs-by-id';
export * from './row-binary';
export * from './part-directories';
export * from './row-binary-types';
export * from './datetime';
