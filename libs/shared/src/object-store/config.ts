import { z } from 'zod';
import { ConfigError, env } from '../config';
import { createLocalObjectStore } from './local';
import type { ObjectStore } from './port';
import { createS3ObjectStore, type PayloadSigning } from './s3';

/** Variables of a process that reads or writes export files (audit, export-worker). */
export const objectStoreConfig = {
  /** local (a directory: the local profile) or s3. Default: s3 when S3_BUCKET is set, else local. */
  EXPORT_STORE: z.enum(['local', 's3']).optional(),
  /** The directory of the local store. */
  EXPORT_DIR: z.string().min(1).default('.data/exports'),
  S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name').optional(),
  /** An S3-compatible server's URL; unset = AWS S3 of S3_REGION. */
  S3_ENDPOINT: z.string().url('must be a URL').optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  /** Static credentials; unset = the AWS SDK's default chain (environment, web identity, instance role). */
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Path-style addressing (bucket in the path), which most S3-compatible servers need. */
  S3_FORCE_PATH_STYLE: env.bool(false),
  /** Key prefix of export files inside the bucket. */
  S3_PREFIX: z.string().regex(/^([A-Za-z0-9._-]+\/)*$/, 'must be empty or end with /').default(''),
  /** Multipart part size (5..512 MiB). */
  S3_PART_SIZE_MB: env.int(8, 5, 512),
  /**
   * SigV4 signing of upload bodies: `auto` (unsigned on an http endpoint on this machine, signed otherwise),
   * `signed` (both ends hash every byte with SHA-256) or `unsigned` (`UNSIGNED-PAYLOAD`: the headers alone).
   */
  S3_PAYLOAD_SIGNING: z.enum(['auto', 'signed', 'unsigned']).default('auto'),
};

export interface ObjectStoreSettings {
  EXPORT_STORE?: 'local' | 's3';
  EXPORT_DIR: string;
  S3_BUCKET?: string;
  S3_ENDPOINT?: string;
  S3_REGION: string;
  S3_ACCESS_KEY_ID?: string;
  S3_SECRET_ACCESS_KEY?: string;
  S3_FORCE_PATH_STYLE: boolean;
  S3_PREFIX: string;
  S3_PART_SIZE_MB: number;
  S3_PAYLOAD_SIGNING?: PayloadSigning;
}

/** The adapter the configuration names. */
export function createObjectStore(c: ObjectStoreSettings): ObjectStore {
  const kind = c.EXPORT_STORE ?? (c.S3_BUCKET ? 's3' : 'local');
  if (kind === 'local') return createLocalObjectStore(c.EXPORT_DIR);
  if (!c.S3_BUCKET) throw new ConfigError(['S3_BUCKET: required when EXPORT_STORE=s3 (not set)']);
  if (!!c.S3_ACCESS_KEY_ID !== !!c.S3_SECRET_ACCESS_KEY) throw new ConfigError(['S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: set both or neither (value hidden)']);
  return createS3ObjectStore({
    bucket: c.S3_BUCKET,
    endpoint: c.S3_ENDPOINT,
    region: c.S3_REGION,
    accessKeyId: c.S3_ACCESS_KEY_ID,
    secretAccessKey: c.S3_SECRET_ACCESS_KEY,
    forcePathStyle: c.S3_FORCE_PATH_STYLE,
    prefix: c.S3_PREFIX,
    partSize: c.S3_PART_SIZE_MB * 1024 * 1024,
    payloadSigning: c.S3_PAYLOAD_SIGNING,
  });
}
