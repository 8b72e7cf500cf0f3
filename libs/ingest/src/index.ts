export * from './ingest.module';
export * from './ingest.service';
export * from './ingest.options';
export * from './run-writer.service';
export * from './run-merge';
export * from './run-row';
export * from './multipart';
export * from './project-directory';
