export * from './postgres';
export * from './redis';
export * from './kafka';
export * from './s3';
export * from './tools';
export * from './schemathesis';
export * from './keycloak';
export * from './certificates';
