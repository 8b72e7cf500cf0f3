export * from './control-plane.module';
