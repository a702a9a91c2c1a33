import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { generate } from 'selfsigned';

export interface SamlSpKeyFiles {
  /** PEM private key (mode 0600): the gateway's SAML_SP_KEY_FILE. */
  keyFile: string;
  /** PEM X.509 certificate: the gateway's SAML_SP_CERT_FILE. */
  certFile: string;
  /** True when this call generated the pair, false when it found one. */
  created: boolean;
}

export const SAML_SP_KEY_NAME = 'sp.key';
export const SAML_SP_CERT_NAME = 'sp.crt';

const KEY_BITS = 3072;
const VALID_YEARS = 10;

/**
 * The SAML service provider's key pair of a data directory: `<dir>/sp.key` and `<dir>/sp.crt`, reused when
 * both exist, generated (RSA 3072, self-signed SHA-256 certificate named `commonName`) when neither does.
 *
 * One file without the other is refused, naming the missing one: an operator may have put their own key or
 * certificate there, and IdPs pin the certificate they were given, so nothing is replaced silently.
 *
 * The pair appears in one step: both files are written (and synced) into a fresh sibling directory (0700; the
 * key 0600) which is then renamed to `dir`, so a crash leaves either no pair or a whole one (and at most a
 * `.<name>.tmp-*` leftover, deleted by the next call). `dir` may already exist when it is empty.
 */
export async function ensureSamlSpKeyPair(dir: string, commonName: string): Promise<SamlSpKeyFiles> {
  const keyFile = path.join(dir, SAML_SP_KEY_NAME);
  const certFile = path.join(dir, SAML_SP_CERT_NAME);
  const found = () => {
    const [key, cert] = [existsSync(keyFile), existsSync(certFile)];
    if (key !== cert) {
      throw new Error(`SAML SP key pair: ${key ? certFile : keyFile} is missing beside ${key ? keyFile : certFile}; put it back (or remove both files to have a new pair generated, which every IdP must then be given)`);
    }
    return key;
  };
  if (found()) return { keyFile, certFile, created: false };

  const parent = path.dirname(dir);
  const prefix = `.${path.basename(dir)}.tmp-`;
  await mkdir(parent, { recursive: true });
  for (const leftover of (await readdir(parent)).filter((n) => n.startsWith(prefix))) {
    await rm(path.join(parent, leftover), { recursive: true, force: true });
  }
  const tmp = path.join(parent, prefix + randomBytes(6).toString('hex'));
  await mkdir(tmp, { mode: 0o700 });
  try {
    const pems = await selfSignedPair(commonName);
    await writeSynced(path.join(tmp, SAML_SP_KEY_NAME), pems.privateKey, 0o600);
    await writeSynced(path.join(tmp, SAML_SP_CERT_NAME), pems.certificate, 0o644);
    try {
      // Replaces `dir` only when it is missing or empty (rename(2) of a directory).
      await rename(tmp, dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
      if (found()) return { keyFile, certFile, created: false }; // another start made the pair first
      throw new Error(`SAML SP key pair: ${dir} holds other files but neither ${SAML_SP_KEY_NAME} nor ${SAML_SP_CERT_NAME}; empty it or put a key pair there`);
    }
    await syncDir(parent);
    return { keyFile, certFile, created: true };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Where a launcher keeps the SAML SP key pair of a data directory (one pair for every gateway on it). */
export const samlSpDir = (dataDir: string) => path.join(dataDir, 'saml-sp');

/**
 * The gateway's SAML SP key pair: `<dataDir>/saml-sp/` (made on the first start, reused afterwards), unless
 * `env` names key files itself (or turns them off with empty values).
 */
export async function launcherSamlSpKeys(dataDir: string, host: string, env?: Record<string, string | undefined>): Promise<SamlSpKeyFiles | undefined> {
  if (env?.SAML_SP_KEY_FILE !== undefined || env?.SAML_SP_CERT_FILE !== undefined) return undefined;
  return ensureSamlSpKeyPair(samlSpDir(dataDir), host);
}

/** The gateway's environment for a key pair from launcherSamlSpKeys (nothing when it returned none). */
export const samlSpEnv = (keys: SamlSpKeyFiles | undefined): Record<string, string> =>
  keys ? { SAML_SP_KEY_FILE: keys.keyFile, SAML_SP_CERT_FILE: keys.certFile } : {};

/**
 * A self-signed certificate is right for a SAML SP: IdPs pin the certificate they read from the SP metadata
 * (or are given) instead of checking it against a CA, so no CA is involved and the validity is long (10 years:
 * replacing it means publishing the new one to every IdP first).
 */
async function selfSignedPair(commonName: string): Promise<{ privateKey: string; certificate: string }> {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(notBefore);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + VALID_YEARS);
  const pems = await generate([{ name: 'commonName', value: commonName }], {
    keySize: KEY_BITS,
    algorithm: 'sha256',
    notBeforeDate: notBefore,
    notAfterDate: notAfter,
    // Signs AuthnRequests, decrypts assertions; not a CA, not a TLS certificate (so no server/client usage).
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    ],
  });
  return { privateKey: pems.private, certificate: pems.cert };
}

async function writeSynced(file: string, text: string, mode: number): Promise<void> {
  const fh = await open(file, 'wx', mode);
  try {
    await fh.writeFile(text, 'utf8');
    await fh.chmod(mode); // exactly this mode, whatever the umask
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
