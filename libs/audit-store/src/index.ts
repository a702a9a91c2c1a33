export * from './clickhouse';
export * from './schema';
export * from './rows';
export * from './store';
export * from './geoip';
export * from './search';
