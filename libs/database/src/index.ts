export * from './data-source';
export * from './embedded-postgres';
export * from './postgres-health.module';
