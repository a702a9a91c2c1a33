import * as grpc from '@grpc/grpc-js';
import { ConfigError } from '../config';
import type { Logger } from '../logger';
import { observeCertificateExpiry, type CertificateUse, type Metrics } from '../metrics';
import { CertificateFileError, WatchedCertificates, type CertificateFiles } from './tls-files';

/** The GRPC_TLS* variables (config.ts grpcTlsConfig). */
export interface GrpcTlsSettings {
  GRPC_TLS: 'off' | 'tls' | 'mtls';
  GRPC_TLS_CERT_FILE?: string;
  GRPC_TLS_KEY_FILE?: string;
  GRPC_TLS_CA_FILE?: string;
  GRPC_TLS_SERVER_NAME?: string;
}

/** What a process does over gRPC: serve (identity, policy, audit) or call (gateway, export-worker). */
export type GrpcRole = 'server' | 'client';

const VARIABLE: Record<keyof CertificateFiles, string> = { certFile: 'GRPC_TLS_CERT_FILE', keyFile: 'GRPC_TLS_KEY_FILE', caFile: 'GRPC_TLS_CA_FILE' };

function filesOf(s: GrpcTlsSettings): CertificateFiles {
  return { certFile: s.GRPC_TLS_CERT_FILE, keyFile: s.GRPC_TLS_KEY_FILE, caFile: s.GRPC_TLS_CA_FILE };
}

/**
 * What GRPC_TLS* lack or contradict for the role, as ConfigError lines (empty when consistent): tls needs the
 * certificate and key on a server and the CA bundle on a client; mtls needs all three everywhere; a certificate
 * needs its key (and the reverse). Pure: the files themselves are checked when the process starts (GrpcTls.fromConfig).
 */
export function grpcTlsProblems(s: GrpcTlsSettings, role: GrpcRole): string[] {
  if (s.GRPC_TLS === 'off') return [];
  const problems: string[] = [];
  const need = (name: keyof CertificateFiles, why: string) => {
    if (!filesOf(s)[name]) problems.push(`${VARIABLE[name]}: required ${why} (not set)`);
  };
  const mode = `with GRPC_TLS=${s.GRPC_TLS}`;
  if (role === 'server' || s.GRPC_TLS === 'mtls') {
    need('certFile', `${mode} (this process's certificate chain)`);
    need('keyFile', `${mode} (this process's private key)`);
  }
  if (role === 'client' || s.GRPC_TLS === 'mtls') need('caFile', `${mode} (the CA bundle peers are verified with)`);
  if (Boolean(s.GRPC_TLS_CERT_FILE) !== Boolean(s.GRPC_TLS_KEY_FILE) && problems.length === 0) {
    problems.push('GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE: both or neither');
  }
  return problems;
}

/**
 * Reloading certificate files that log each load and problem and keep the expiry gauge of `use` current. Files
 * that cannot be used at start (unreadable, not PEM, a key not the certificate's) throw a ConfigError naming
 * their variable.
 */
export function watchCertificates(
  files: CertificateFiles,
  variables: Record<keyof CertificateFiles, string>,
  use: CertificateUse,
  deps: { logger?: Logger; metrics?: Metrics; refreshMs?: number },
): WatchedCertificates {
  try {
    return watch(files, use, deps);
  } catch (err) {
    if (!(err instanceof CertificateFileError)) throw err;
    throw new ConfigError([`${variables[err.which]}: ${err.message} (got "${files[err.which]}")`]);
  }
}

function watch(files: CertificateFiles, use: CertificateUse, deps: { logger?: Logger; metrics?: Metrics; refreshMs?: number }): WatchedCertificates {
  return new WatchedCertificates(files, {
    refreshMs: deps.refreshMs,
    onLoad: (m) => {
      if (deps.metrics && m.cert) observeCertificateExpiry(deps.metrics, use, m.cert);
      if (m.leaf) deps.logger?.info({ use, subject: m.leaf.subject, notAfter: m.leaf.validTo, sha256: m.leaf.fingerprint256 }, 'TLS certificate loaded');
    },
    onError: (err) => deps.logger?.warn({ use, file: files[err.which], problem: err.message }, 'TLS certificate files unusable: the previous certificate stays in use'),
  });
}

/**
 * A process's gRPC transport security. `off`: plain HTTP/2. `tls`: servers present their certificate, clients
 * verify it against the CA bundle. `mtls`: clients present theirs too and servers refuse a client without a
 * certificate from the CA. Files are re-read every refreshMs: servers serve a new certificate to new connections
 * and clients use new material for new connections, without a restart.
 */
export class GrpcTls {
  private serverCreds?: grpc.ServerCredentials;
  private channelCreds?: grpc.ChannelCredentials;

  private constructor(
    readonly mode: 'off' | 'tls' | 'mtls',
    private readonly certificates?: WatchedCertificates,
    private readonly serverName?: string,
  ) {}

  /** Plain gRPC (the local launchers, tests). */
  static readonly off = new GrpcTls('off');

  /** From consistent settings (grpcTlsProblems found nothing); reads the files (a ConfigError naming the unusable one) and watches them. */
  static fromConfig(s: GrpcTlsSettings, deps: { logger?: Logger; metrics?: Metrics; refreshMs?: number } = {}): GrpcTls {
    if (s.GRPC_TLS === 'off') return GrpcTls.off;
    return new GrpcTls(s.GRPC_TLS, watchCertificates(filesOf(s), VARIABLE, 'grpc', deps), s.GRPC_TLS_SERVER_NAME);
  }

  /** Credentials of a gRPC server (needs the certificate and key). */
  serverCredentials(): grpc.ServerCredentials {
    if (!this.certificates) return grpc.ServerCredentials.createInsecure();
    if (!this.certificates.current.cert) throw new Error('GRPC_TLS: a server needs GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE');
    // grpc-js 1.14 declares (caProvider, identityProvider, ...) but hands them on to a constructor taking
    // (identityProvider, caProvider, ...): the identity goes first here. With mtls both are the same provider;
    // tls.spec.ts fails (a tls server without a CA file) if a later grpc-js swaps them back.
    this.serverCreds ??= grpc.experimental.createCertificateProviderServerCredentials(
      this.certificates,
      this.mode === 'mtls' ? this.certificates : null,
      this.mode === 'mtls',
    );
    return this.serverCreds;
  }

  /** Credentials of a channel (needs the CA bundle; with mtls the certificate and key too). */
  channelCredentials(): grpc.ChannelCredentials {
    if (!this.certificates) return grpc.credentials.createInsecure();
    if (!this.certificates.current.ca) throw new Error('GRPC_TLS: a client needs GRPC_TLS_CA_FILE');
    this.channelCreds ??= grpc.experimental.createCertificateProviderChannelCredentials(
      this.certificates,
      this.mode === 'mtls' ? this.certificates : null,
    );
    return this.channelCreds;
  }

  /** Channel options: the name checked in the server's certificate when GRPC_TLS_SERVER_NAME overrides the target's host. */
  channelOptions(): Partial<grpc.ChannelOptions> {
    return this.certificates && this.serverName ? { 'grpc.ssl_target_name_override': this.serverName } : {};
  }

  /** Stops watching the files. */
  close(): void {
    this.certificates?.close();
  }
}
