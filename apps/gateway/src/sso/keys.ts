import { ConfigError } from '@secsvc/shared';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { KeyPair, SpKeys } from './sp';

type SpKeyConfig = {
  SAML_SP_KEY_FILE?: string;
  SAML_SP_CERT_FILE?: string;
  SAML_SP_ROLLOVER_KEY_FILE?: string;
  SAML_SP_ROLLOVER_CERT_FILE?: string;
};

/** One PEM key pair from two files (both or neither); every problem names its variable. */
function readPair(keyVar: keyof SpKeyConfig, certVar: keyof SpKeyConfig, config: SpKeyConfig): KeyPair | undefined {
  const keyFile = config[keyVar];
  const certFile = config[certVar];
  if (!keyFile && !certFile) return undefined;
  if (!keyFile || !certFile) throw new ConfigError([`${keyFile ? certVar : keyVar}: required with ${keyFile ? keyVar : certVar} (not set)`]);
  const read = (name: string, file: string) => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new ConfigError([`${name}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`]);
    }
  };
  const privateKey = read(keyVar, keyFile);
  const certificate = read(certVar, certFile);
  try {
    createPrivateKey(privateKey);
  } catch {
    throw new ConfigError([`${keyVar}: not a PEM private key`]);
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certificate);
  } catch {
    throw new ConfigError([`${certVar}: not a PEM X.509 certificate`]);
  }
  if (!cert.checkPrivateKey(createPrivateKey(privateKey))) throw new ConfigError([`${certVar}: does not match ${keyVar}`]);
  return { privateKey, certificate };
}

/**
 * The SP key pair from SAML_SP_KEY_FILE and SAML_SP_CERT_FILE (both or neither), and the optional rollover pair
 * (SAML_SP_ROLLOVER_*: published and accepted, never used to sign); start-up stops on a bad file.
 */
export function readSpKeys(config: SpKeyConfig): SpKeys | undefined {
  const active = readPair('SAML_SP_KEY_FILE', 'SAML_SP_CERT_FILE', config);
  const rollover = readPair('SAML_SP_ROLLOVER_KEY_FILE', 'SAML_SP_ROLLOVER_CERT_FILE', config);
  if (rollover && !active) throw new ConfigError(['SAML_SP_ROLLOVER_KEY_FILE: needs SAML_SP_KEY_FILE and SAML_SP_CERT_FILE (the active pair; not set)']);
  if (active && rollover && new X509Certificate(active.certificate).fingerprint256 === new X509Certificate(rollover.certificate).fingerprint256) {
    throw new ConfigError(['SAML_SP_ROLLOVER_CERT_FILE: is the active certificate (SAML_SP_CERT_FILE); give the next or the previous pair']);
  }
  return active && { ...active, ...(rollover && { rollover }) };
}
