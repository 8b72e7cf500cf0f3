export * from './format';
export * from './validate';
export * from './model';
export * from './usage';
export * from './tokenizer';
export * from './prices';
export * from './analyze';
