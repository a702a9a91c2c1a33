export * from './port';
export * from './local';
export * from './s3';
export * from './config';
export * from './range';
