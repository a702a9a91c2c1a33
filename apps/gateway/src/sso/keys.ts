import { ConfigError } from '@secsvc/shared';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SpKeys } from './sp';

/** The SP key pair from SAML_SP_KEY_FILE and SAML_SP_CERT_FILE (both or neither); start-up stops on a bad file. */
export function readSpKeys(config: { SAML_SP_KEY_FILE?: string; SAML_SP_CERT_FILE?: string }): SpKeys | undefined {
  const { SAML_SP_KEY_FILE: keyFile, SAML_SP_CERT_FILE: certFile } = config;
  if (!keyFile && !certFile) return undefined;
  if (!keyFile || !certFile) throw new ConfigError([`${keyFile ? 'SAML_SP_CERT_FILE' : 'SAML_SP_KEY_FILE'}: required with ${keyFile ? 'SAML_SP_KEY_FILE' : 'SAML_SP_CERT_FILE'} (not set)`]);
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError([`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
    }
  };
  const privateKey = read('SAML_SP_KEY_FILE', keyFile);
  const certificate = read('SAML_SP_CERT_FILE', certFile);
  try {
    createPrivateKey(privateKey);
  } catch {
    throw new ConfigError(['SAML_SP_KEY_FILE: not a PEM private key']);
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certificate);
  } catch {
    throw new ConfigError(['SAML_SP_CERT_FILE: not a PEM X.509 certificate']);
  }
  if (!cert.checkPrivateKey(createPrivateKey(privateKey))) throw new ConfigError(['SAML_SP_CERT_FILE: does not match SAML_SP_KEY_FILE']);
  return { privateKey, certificate };
}
