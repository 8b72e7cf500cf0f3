export * from './internal-token';
export * from './auth.guard';
export * from './permissions';
export * from './session-token';
