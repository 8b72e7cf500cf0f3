export * from './data-source';
export * from './embedded-postgres';
