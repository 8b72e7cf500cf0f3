export * from './experiments.module';
export * from './experiment-ports';
export * from './experiment-upload.service';
export * from './experiment-compare.service';
