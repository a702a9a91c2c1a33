export * from './stack';
export * from './testing';
