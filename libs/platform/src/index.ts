export * from './errors';
export * from './validation';
export * from './logger';
export * from './body-reader';
export * from './http-exception.filter';
export * from './health';
export * from './http-app';
export * from './net';
