export * from './audit.publisher';
export * from './audit-client.module';
export * from './tracked-operation';
