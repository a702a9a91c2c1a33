export * from './local-stack';
export * from './ports';
export * from './postgres';
