import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../stack/ports';
import { findTool, type HarnessServerOptions } from './tools';

/** The versitygw version scripts/install-tools.sh installs (with `go install`). */
export const VERSITYGW_VERSION = 'v1.8.0';

/**
 * The versitygw binary (an S3-compatible gateway, here over a posix directory): $VERSITYGW, else the one
 * scripts/install-tools.sh installs into ~/.cache/secsvc/bin (or $SECSVC_TOOLS_DIR), else on PATH. Missing
 * under CI=true is an error: CI installs it, so nothing may skip.
 */
export function findVersitygw(): string | undefined {
  return findTool('versitygw', 'VERSITYGW', 'run scripts/install-tools.sh (or set VERSITYGW)');
}

/** Why S3 tests cannot run here, or undefined when they can (under CI=true a missing binary throws). */
export function s3SkipReason(): string | undefined {
  return findVersitygw() ? undefined : 'versitygw not found (bash scripts/install-tools.sh, or set VERSITYGW): S3 tests skipped';
}

export interface TestS3 {
  /** http://127.0.0.1:<port> */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Creates a bucket (S3 CreateBucket) and returns its name. */
  createBucket: (name?: string) => Promise<string>;
  /** The S3 store settings (objectStoreConfig variables) for a bucket on this server. */
  env: (bucket: string) => Record<string, string>;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and deletes its directories. */
  stop: () => Promise<void>;
  /** Stops the server and starts it again on the same port and directories (its buckets and objects stay). */
  restart: () => Promise<void>;
  /** The server's process id (while it runs). */
  readonly pid: number | undefined;
}

/**
 * A real versitygw on a free 127.0.0.1 port, a child process of the test, serving S3 over a posix backend
 * in a fresh temp directory (buckets are folders, object metadata in a sidecar folder). Resolves once it
 * answers HTTP.
 */
export async function startTestS3(options: HarnessServerOptions = {}): Promise<TestS3> {
  const binary = options.binary ?? findVersitygw();
  if (!binary) throw new Error('versitygw not found (bash scripts/install-tools.sh, or set VERSITYGW)');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-s3-'));
  for (const d of ['data', 'meta', 'iam']) await mkdir(path.join(dir, d));
  const port = await freePort();
  const accessKeyId = 'test' + randomBytes(8).toString('hex');
  const secretAccessKey = randomBytes(24).toString('hex');
  const endpoint = `http://127.0.0.1:${port}`;
  const region = 'us-east-1';
  let child: ChildProcess | undefined;

  /** Ends the running server (asked: not a crash). */
  const halt = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  const stop = async () => {
    await halt();
    await rm(dir, { recursive: true, force: true });
  };
  const launch = async () => {
    const tail: string[] = [];
    const proc = spawn(
      binary,
      ['--port', `127.0.0.1:${port}`, '--iam-dir', path.join(dir, 'iam'), 'posix', '--sidecar', path.join(dir, 'meta'), path.join(dir, 'data')],
      { env: { PATH: process.env.PATH, HOME: process.env.HOME, ROOT_ACCESS_KEY: accessKeyId, ROOT_SECRET_KEY: secretAccessKey }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = proc;
    for (const stream of [proc.stdout!, proc.stderr!]) {
      stream.on('data', (chunk: Buffer) => {
        tail.push(chunk.toString());
        if (tail.length > 20) tail.shift();
      });
    }
    const deadline = Date.now() + (options.startTimeoutMs ?? 15_000);
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`versitygw exited during start-up (${proc.signalCode ?? `code ${proc.exitCode}`}):\n${tail.join('')}`);
      }
      const answered = await fetch(endpoint, { signal: AbortSignal.timeout(500) }).then(
        () => true,
        () => false,
      );
      if (answered) break;
      if (Date.now() > deadline) {
        await halt();
        throw new Error(`versitygw did not answer on ${endpoint} in time:\n${tail.join('')}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    proc.once('exit', (code, signal) => {
      if (child === proc) options.onUnexpectedExit?.(code, signal);
    });
  };
  try {
    await launch();
  } catch (err) {
    await stop();
    throw err;
  }
  const client = new S3Client({ region, endpoint, forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
  return {
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    createBucket: async (name = `b-${randomBytes(6).toString('hex')}`) => {
      await client.send(new CreateBucketCommand({ Bucket: name }));
      return name;
    },
    env: (bucket) => ({
      EXPORT_STORE: 's3',
      S3_BUCKET: bucket,
      S3_ENDPOINT: endpoint,
      S3_REGION: region,
      S3_ACCESS_KEY_ID: accessKeyId,
      S3_SECRET_ACCESS_KEY: secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
    }),
    stop: async () => {
      client.destroy();
      await stop();
    },
    restart: async () => {
      await halt();
      await launch();
    },
    get pid() {
      return child?.pid;
    },
  };
}
