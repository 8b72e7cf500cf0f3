export * from './internal-token';
export * from './auth.guard';
