import { commonConfig, databaseConfig, env, loadConfig } from '@secsvc/shared';
import { z } from 'zod';

export const identityConfigShape = {
  ...commonConfig,
  ...databaseConfig,
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50051),
  ADMIN_PORT: env.port(9101),
  /** Local mail port: password reset messages are written here as JSON files (and noted on the console). */
  MAIL_DIR: z.string().min(1).optional(),
  BOOTSTRAP_API_KEY: z
    .string()
    .regex(/^svc_sk_[A-Za-z0-9_-]{32,200}$/, 'must be svc_sk_ followed by at least 32 url-safe characters')
    .optional(),
};

export type IdentityConfig = ReturnType<typeof loadIdentityConfig>;

export function loadIdentityConfig(source: Record<string, string | undefined> = process.env) {
  return loadConfig(identityConfigShape, source);
}
