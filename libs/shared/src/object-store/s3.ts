import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { checkKey, type ByteRange, type ObjectStore, type ObjectWriter } from './port';

export interface S3StoreOptions {
  bucket: string;
  /** Custom endpoint of an S3-compatible server (versitygw, Ceph, ...); unset = AWS. */
  endpoint?: string;
  region: string;
  /** Static credentials; unset = the SDK's default chain (environment, instance role, ...). */
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /** Key prefix inside the bucket, e.g. "exports/". */
  prefix?: string;
  /** Multipart part size in bytes (S3's minimum is 5 MiB for every part but the last). */
  partSize: number;
  /** Parts uploading at once per writer while the next fills (memory: (1 + this) × partSize per writer). */
  concurrency?: number;
  /**
   * How the bytes of UploadPart and PutObject are covered by the SigV4 signature. `signed`: the SHA-256 of the
   * body is signed (the server hashes it again and refuses a mismatch: both ends hash every byte). `unsigned`:
   * `x-amz-content-sha256: UNSIGNED-PAYLOAD`, the headers alone are signed (over https TLS protects the bytes;
   * over plain http nothing does). `auto` (default): unsigned only when the endpoint is plain http on a
   * loopback address (the server on the same machine: no network to protect), signed otherwise (AWS, and any
   * remote S3-compatible server, as before).
   */
  payloadSigning?: PayloadSigning;
}

export type PayloadSigning = 'auto' | 'signed' | 'unsigned';

const MIN_PART = 5 * 1024 * 1024;

/** An http:// endpoint whose host is this machine (localhost, 127.0.0.0/8, ::1). */
export function isLoopbackHttp(endpoint: string | undefined): boolean {
  if (!endpoint) return false;
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return false;
  }
  const host = url.hostname.toLowerCase();
  return url.protocol === 'http:' && (host === 'localhost' || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host));
}

/** Whether UploadPart and PutObject bodies go unsigned (see S3StoreOptions.payloadSigning). */
export function unsignedPayload(o: Pick<S3StoreOptions, 'endpoint' | 'payloadSigning'>): boolean {
  const mode = o.payloadSigning ?? 'auto';
  return mode === 'unsigned' || (mode === 'auto' && isLoopbackHttp(o.endpoint));
}

const BODY_COMMANDS = new Set(['UploadPartCommand', 'PutObjectCommand']);

function isNotFound(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NotFound' || e?.name === 'NoSuchKey' || e?.$metadata?.httpStatusCode === 404;
}

/**
 * Objects in an S3 bucket through @aws-sdk/client-s3. A writer fills one part (partSize) and uploads it with
 * multipart upload while the next fills (at most `concurrency` parts in flight, in reused buffers, so memory
 * stays flat whatever the object's size); an object smaller than one part is one PutObject. Nothing is visible under
 * the key before CompleteMultipartUpload; abort() (or sweep() after a crash) drops the uploaded parts. Bodies are
 * signed (SigV4 over their SHA-256) except on a loopback http endpoint or when configured otherwise
 * (payloadSigning).
 */
export function createS3ObjectStore(o: S3StoreOptions): ObjectStore {
  if (o.partSize < MIN_PART) throw new Error('S3 part size must be at least 5 MiB');
  const client = new S3Client({
    region: o.region,
    endpoint: o.endpoint,
    forcePathStyle: o.forcePathStyle,
    credentials: o.accessKeyId && o.secretAccessKey ? { accessKeyId: o.accessKeyId, secretAccessKey: o.secretAccessKey } : undefined,
    // Checksums only when an operation requires them: S3-compatible servers differ in what they accept.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  if (unsignedPayload(o)) {
    // Before signing (finalizeRequest): the signer takes a present x-amz-content-sha256 as the payload hash
    // instead of hashing the body, and signs the header itself.
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const request = args.request as { headers?: Record<string, string> } | undefined;
        if (request?.headers && BODY_COMMANDS.has(context.commandName ?? '')) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
        return next(args);
      },
      { step: 'build', name: 'secsvcUnsignedPayload' },
    );
  }
  const Bucket = o.bucket;
  const keyOf = (key: string) => `${o.prefix ?? ''}${checkKey(key)}`;
  const concurrency = o.concurrency ?? 2;

  return {
    kind: 's3',
    async create(key: string, contentType: string): Promise<ObjectWriter> {
      const Key = keyOf(key);
      // Part buffers: the one filling plus those uploading, reused once their upload settled, so a writer
      // holds at most (concurrency + 1) × partSize bytes and makes no garbage per part.
      const free: Buffer[] = [];
      let current: Buffer | undefined;
      let filled = 0;
      let size = 0;
      let uploadId: string | undefined;
      const parts: CompletedPart[] = [];
      const inFlight = new Set<Promise<void>>();
      let failure: unknown;

      const uploadPart = async () => {
        const buf = current!;
        const body = buf.subarray(0, filled);
        current = undefined;
        filled = 0;
        while (inFlight.size >= concurrency) await Promise.race(inFlight);
        if (failure) throw failure;
        uploadId ??= (await client.send(new CreateMultipartUploadCommand({ Bucket, Key, ContentType: contentType }))).UploadId;
        const PartNumber = parts.length + 1;
        const slot: CompletedPart = { PartNumber };
        parts.push(slot);
        const p: Promise<void> = client
          .send(new UploadPartCommand({ Bucket, Key, UploadId: uploadId, PartNumber, Body: body, ContentLength: body.length }))
          .then((r) => void (slot.ETag = r.ETag))
          .catch((err: unknown) => void (failure ??= err))
          .finally(() => {
            inFlight.delete(p);
            free.push(buf);
          });
        inFlight.add(p);
      };

      return {
        async write(chunk) {
          if (failure) throw failure;
          size += chunk.length;
          let off = 0;
          while (off < chunk.length) {
            current ??= free.pop() ?? Buffer.allocUnsafe(o.partSize);
            const n = chunk.copy(current, filled, off);
            filled += n;
            off += n;
            if (filled === o.partSize) await uploadPart();
          }
        },
        async finish() {
          if (uploadId === undefined && inFlight.size === 0) {
            const body = current ? current.subarray(0, filled) : Buffer.alloc(0);
            await client.send(new PutObjectCommand({ Bucket, Key, Body: body, ContentType: contentType, ContentLength: body.length }));
            return { size };
          }
          if (filled > 0) await uploadPart();
          await Promise.all(inFlight);
          if (failure) throw failure;
          await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId: uploadId, MultipartUpload: { Parts: parts } }));
          return { size };
        },
        async abort() {
          current = undefined;
          await Promise.allSettled(inFlight);
          if (uploadId) await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId: uploadId })).catch(() => undefined);
        },
      };
    },
    async stat(key) {
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket, Key: keyOf(key) }));
        return { size: Number(head.ContentLength ?? 0) };
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async read(key: string, range?: ByteRange): Promise<Readable> {
      const res = await client.send(new GetObjectCommand({ Bucket, Key: keyOf(key), Range: range ? `bytes=${range.start}-${range.end}` : undefined }));
      if (!(res.Body instanceof Readable)) throw new Error('S3 GetObject returned no stream');
      return res.Body;
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: keyOf(key) }));
    },
    async sweep(olderThanMs) {
      let removed = 0;
      const cutoff = Date.now() - olderThanMs;
      let KeyMarker: string | undefined;
      let UploadIdMarker: string | undefined;
      for (;;) {
        const page = await client.send(new ListMultipartUploadsCommand({ Bucket, Prefix: o.prefix, KeyMarker, UploadIdMarker }));
        for (const u of page.Uploads ?? []) {
          if (u.Key && u.UploadId && u.Initiated && u.Initiated.getTime() < cutoff) {
            await client.send(new AbortMultipartUploadCommand({ Bucket, Key: u.Key, UploadId: u.UploadId })).catch(() => undefined);
            removed++;
          }
        }
        if (!page.IsTruncated) return removed;
        KeyMarker = page.NextKeyMarker;
        UploadIdMarker = page.NextUploadIdMarker;
      }
    },
    close: async () => client.destroy(),
  };
}
