export * from './postgres';
export * from './kafka';
