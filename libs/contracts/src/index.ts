export * from './common.schema';
export * from './run.schema';
export * from './project.schema';
export * from './info.schema';
export * from './identity.schema';
export * from './events.schema';
export * from './audit.schema';
export * from './topics';
