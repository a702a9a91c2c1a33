export * from './local-stack';
export * from './ports';
export * from './postgres';
export * from './gateway-process';
