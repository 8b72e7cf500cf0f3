export * from './audit.publisher';
export * from './audit-client.module';
export * from './tracked-operation';
export { currentTrackedOperation } from './audit-context';
