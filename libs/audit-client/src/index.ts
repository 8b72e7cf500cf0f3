export * from './audit.publisher';
export * from './audit-client.module';
export * from './tracked-operation';
export { currentTrackedOperation, inTrackedOperation } from './audit-context';
