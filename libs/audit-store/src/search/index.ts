export * from './tokens';
export * from './query';
export * from './compile';
export * from './highlight';
