import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generate } from 'selfsigned';

/** A PEM certificate and its private key. */
export interface TestKeyPair {
  cert: string;
  key: string;
}

export interface TestCertificateOptions {
  /** DNS names and IP addresses of the subjectAltName (default localhost and 127.0.0.1). */
  dns?: string[];
  ips?: string[];
  /** Validity end (default: a year from now). */
  notAfter?: Date;
}

/** A throwaway certificate authority for tests: issues leaf certificates (serverAuth and clientAuth, as cert-manager does). */
export interface TestCa extends TestKeyPair {
  issue: (commonName: string, opts?: TestCertificateOptions) => Promise<TestKeyPair>;
}

/** A new CA (EC P-256, SHA-256) for tests; nothing leaves memory until written. */
export async function createTestCa(commonName = 'secsvc test CA'): Promise<TestCa> {
  const ca = await generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  const pair = { cert: ca.cert, key: ca.private };
  return {
    ...pair,
    issue: async (cn, opts = {}) => {
      const leaf = await generate([{ name: 'commonName', value: cn }], {
        keyType: 'ec',
        algorithm: 'sha256',
        ca: pair,
        ...(opts.notAfter && { notAfterDate: opts.notAfter }),
        extensions: [
          { name: 'basicConstraints', cA: false },
          { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
          { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
          {
            name: 'subjectAltName',
            altNames: [...(opts.dns ?? ['localhost']).map((value) => ({ type: 2 as const, value })), ...(opts.ips ?? ['127.0.0.1']).map((ip) => ({ type: 7 as const, ip }))],
          },
        ],
      });
      return { cert: leaf.cert, key: leaf.private };
    },
  };
}

/** Writes `<dir>/<name>.crt` and `<dir>/<name>.key` (0600); returns their paths. */
export async function writeKeyPair(dir: string, name: string, pair: TestKeyPair): Promise<{ certFile: string; keyFile: string }> {
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  await writeFile(certFile, pair.cert);
  await writeFile(keyFile, pair.key, { mode: 0o600 });
  return { certFile, keyFile };
}
