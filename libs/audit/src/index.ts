export * from './audit.module';
