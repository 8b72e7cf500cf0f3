export * from './export-worker.module';
