export * from './requests';
export * from './log-queries';
export * from './exports';
export * from './chain-verification';
