export * from './bus';
export * from './in-process.bus';
export * from './durable-log';
export * from './kafka.bus';
export * from './bus.module';
export * from './bus.transport';
