export * from './postgres';
export * from './multipart-body';
export * from './app-process';
export * from './kafka-server';
export * from './clickhouse-http-server';
export * from './cluster';
export * from './rate-limit-table';
export * from './s3-server';
