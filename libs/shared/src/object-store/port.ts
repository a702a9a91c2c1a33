import type { Readable } from 'node:stream';

/** A byte range of an object, both ends inclusive (as HTTP Range counts). */
export interface ByteRange {
  start: number;
  end: number;
}

/** An object being written: bytes go in order; nothing is visible under the key until finish() resolves. */
export interface ObjectWriter {
  /**
   * Resolves once the store has taken the chunk (backpressure: await it before writing more). The store keeps
   * no reference to `chunk` after that, so the caller may reuse its buffer.
   */
  write: (chunk: Buffer) => Promise<void>;
  /** Makes the object visible under its key, whole; resolves to its size in bytes. */
  finish: () => Promise<{ size: number }>;
  /** Drops what was written; the key is left as it was. */
  abort: () => Promise<void>;
}

/**
 * Where export files live: a local directory (local profile) or S3-compatible object storage (distributed).
 * Keys are relative paths of `[A-Za-z0-9._-]` segments separated by `/`.
 */
export interface ObjectStore {
  readonly kind: 'local' | 's3';
  create: (key: string, contentType: string) => Promise<ObjectWriter>;
  /** Size of a stored object, or undefined when there is none. */
  stat: (key: string) => Promise<{ size: number } | undefined>;
  /** The object's bytes (or one range of them) as a stream. */
  read: (key: string, range?: ByteRange) => Promise<Readable>;
  /** Deletes an object; deleting a missing one is not an error. */
  delete: (key: string) => Promise<void>;
  /** Removes what interrupted writers left behind (partial files, unfinished uploads) older than `olderThanMs`. */
  sweep: (olderThanMs: number) => Promise<number>;
  close: () => Promise<void>;
}

const KEY = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

/** Throws unless `key` is a safe relative key (no empty, `.` or `..` segments). */
export function checkKey(key: string): string {
  if (key.length > 512 || !KEY.test(key) || key.split('/').some((s) => s === '.' || s === '..')) throw new Error(`invalid object key ${JSON.stringify(key)}`);
  return key;
}
