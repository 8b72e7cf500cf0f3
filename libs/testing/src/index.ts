export * from './postgres';
export * from './multipart-body';
