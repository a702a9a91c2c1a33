import path from 'node:path';

export * as identity from './gen/secsvc/identity/v1/identity';
export * as policy from './gen/secsvc/policy/v1/policy';
export * as audit from './gen/secsvc/audit/v1/audit';
export * as events from './gen/secsvc/events/v1/events';

/** Folder holding the .proto sources (used at run time by server reflection). Same from src/ and dist/. */
export const protoRoot = path.join(__dirname, '..', 'proto');

/**
 * FileDescriptorSets built by buf from libs/proto/proto (with the well-known types they import) and from
 * grpc-health-check's health.proto: what server reflection serves.
 */
export const descriptorSets = [
  path.join(__dirname, '..', 'descriptors', 'secsvc.binpb'),
  path.join(__dirname, '..', 'descriptors', 'grpc-health.binpb'),
];

/** The .proto file of each service, relative to protoRoot. */
export const protoFiles = {
  identity: 'secsvc/identity/v1/identity.proto',
  policy: 'secsvc/policy/v1/policy.proto',
  audit: 'secsvc/audit/v1/audit.proto',
  events: 'secsvc/events/v1/events.proto',
} as const;

/** Fully qualified gRPC service names, as health checks and reflection know them. */
export const serviceNames = {
  identity: 'secsvc.identity.v1.IdentityService',
  policy: 'secsvc.policy.v1.PolicyService',
  audit: 'secsvc.audit.v1.AuditService',
} as const;

/**
 * Unary methods a service also serves in batches (unary -> batch method, as the generated clients name them):
 * the server registers them (ServiceRegistration.batches) and the gateway's client coalesces calls into them.
 */
export const batchMethods = {
  identity: { token: 'tokenBatch', getUser: 'getUserBatch', reportAuthFailure: 'reportAuthFailureBatch' },
  policy: { simulate: 'simulateBatch', authorize: 'authorizeBatch' },
} as const;

export { AuditServiceBulk, AuditServiceBulkClient, decodeLogRowsChunk, encodeLogRowsChunk } from './bulk';
