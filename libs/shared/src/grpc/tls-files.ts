import type { experimental } from '@grpc/grpc-js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** PEM files of a TLS endpoint: its certificate chain and key, and the CA bundle it verifies its peer with. */
export interface CertificateFiles {
  certFile?: string;
  keyFile?: string;
  caFile?: string;
}

/** The files' contents, checked: the certificate parses and matches the key, the CA bundle parses. */
export interface CertificateMaterial {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
  /** The first certificate of `cert` (this endpoint's own). */
  leaf?: X509Certificate;
}

/** A file that cannot be used, and which one (so configuration errors name its variable). */
export class CertificateFileError extends Error {
  constructor(
    readonly which: keyof CertificateFiles,
    message: string,
  ) {
    super(message);
    this.name = 'CertificateFileError';
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function read(which: keyof CertificateFiles, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new CertificateFileError(which, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
}

/** Every certificate of a PEM bundle, parsed (at least one). */
function certificates(which: keyof CertificateFiles, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new CertificateFileError(which, 'holds no PEM certificate');
  try {
    return blocks.map((b) => new X509Certificate(b));
  } catch {
    throw new CertificateFileError(which, 'holds a PEM certificate that does not parse');
  }
}

/**
 * Reads and checks the files (synchronously: they are small, and a check at start must finish before serving).
 * Throws a CertificateFileError naming the faulty file; never puts a key's content in a message.
 */
export function readCertificateFiles(files: CertificateFiles): CertificateMaterial {
  const out: CertificateMaterial = {};
  if (files.certFile) {
    out.cert = read('certFile', files.certFile);
    out.leaf = certificates('certFile', out.cert)[0];
  }
  if (files.keyFile) {
    out.key = read('keyFile', files.keyFile);
    let key;
    try {
      key = createPrivateKey(out.key);
    } catch {
      throw new CertificateFileError('keyFile', 'holds no unencrypted PEM private key');
    }
    if (out.leaf && !out.leaf.checkPrivateKey(key)) throw new CertificateFileError('keyFile', 'is not the key of the certificate');
  }
  if (files.caFile) {
    out.ca = read('caFile', files.caFile);
    certificates('caFile', out.ca);
  }
  return out;
}

const same = (a: Buffer | undefined, b: Buffer | undefined) => (a && b ? a.equals(b) : a === b);

export interface WatchedCertificatesOptions {
  /** How often the files are read again (default 30 s; Kubernetes updates a mounted Secret within about a minute). */
  refreshMs?: number;
  /** Called with the material at start and each time the files changed (and passed the checks). */
  onLoad?: (material: CertificateMaterial) => void;
  /** Called when a read finds the files unusable (once per distinct problem); the last good material stays. */
  onError?: (err: CertificateFileError) => void;
}

/**
 * Certificate files read at start and again every `refreshMs`: a change that passes the checks replaces what
 * new connections use; files caught mid-replacement (a certificate without its key) or broken leave the last good
 * material in use until a later read succeeds. As a grpc-js CertificateProvider it feeds server and channel
 * credentials (grpc/tls.ts); `current` serves anything else that opens TLS connections (the ClickHouse agent).
 */
export class WatchedCertificates implements experimental.CertificateProvider {
  private material: CertificateMaterial;
  private readonly timer: NodeJS.Timeout;
  private readonly caListeners = new Set<experimental.CaCertificateUpdateListener>();
  private readonly identityListeners = new Set<experimental.IdentityCertificateUpdateListener>();
  private lastProblem: string | undefined;

  /** Throws a CertificateFileError when the files are not usable at start. */
  constructor(
    readonly files: CertificateFiles,
    private readonly opts: WatchedCertificatesOptions = {},
  ) {
    this.material = readCertificateFiles(files);
    opts.onLoad?.(this.material);
    this.timer = setInterval(() => this.refresh(), opts.refreshMs ?? 30_000);
    this.timer.unref();
  }

  /** The material in use (the last good read). */
  get current(): CertificateMaterial {
    return this.material;
  }

  /** Reads the files now; true when they changed (and the new material is in use). */
  refresh(): boolean {
    let next: CertificateMaterial;
    try {
      next = readCertificateFiles(this.files);
    } catch (err) {
      if (!(err instanceof CertificateFileError)) throw err;
      const problem = `${err.which}: ${err.message}`;
      if (problem !== this.lastProblem) this.opts.onError?.(err);
      this.lastProblem = problem;
      return false;
    }
    this.lastProblem = undefined;
    const prev = this.material;
    const identityChanged = !same(prev.cert, next.cert) || !same(prev.key, next.key);
    const caChanged = !same(prev.ca, next.ca);
    if (!identityChanged && !caChanged) return false;
    this.material = next;
    this.opts.onLoad?.(next);
    if (identityChanged) for (const l of this.identityListeners) l(this.identity());
    if (caChanged) for (const l of this.caListeners) l(this.caUpdate());
    return true;
  }

  /** Stops reading the files. */
  close(): void {
    clearInterval(this.timer);
  }

  private identity(): experimental.IdentityCertificateUpdate | null {
    const { cert, key } = this.material;
    return cert && key ? { certificate: cert, privateKey: key } : null;
  }

  private caUpdate(): experimental.CaCertificateUpdate | null {
    return this.material.ca ? { caCertificate: this.material.ca } : null;
  }

  addCaCertificateListener(listener: experimental.CaCertificateUpdateListener): void {
    this.caListeners.add(listener);
    process.nextTick(listener, this.caUpdate());
  }

  removeCaCertificateListener(listener: experimental.CaCertificateUpdateListener): void {
    this.caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.add(listener);
    process.nextTick(listener, this.identity());
  }

  removeIdentityCertificateListener(listener: experimental.IdentityCertificateUpdateListener): void {
    this.identityListeners.delete(listener);
  }
}
