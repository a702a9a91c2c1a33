export * from './local-stack';
export * from './ports';
export * from './postgres';
export * from './gateway-process';
export * from './app-process';
export * from './load-balancer';
export * from './distributed-stack';
export * from './saml-sp-keys';
