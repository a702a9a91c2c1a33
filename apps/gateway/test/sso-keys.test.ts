/** SAML_SP_KEY_FILE / SAML_SP_CERT_FILE: read once at start; every problem stops start-up naming the variable. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '@secsvc/shared';
import { readSpKeys } from '../src/sso/keys';
import { selfSignedCertificate } from './support/saml-idp';

let dir: string;
let files: Record<'key' | 'cert' | 'otherKey' | 'otherCert' | 'junk', string>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sso-keys-'));
  const a = await selfSignedCertificate('a.test');
  const b = await selfSignedCertificate('b.test');
  files = { key: path.join(dir, 'a.key'), cert: path.join(dir, 'a.crt'), otherKey: path.join(dir, 'b.key'), otherCert: path.join(dir, 'b.crt'), junk: path.join(dir, 'junk.pem') };
  await writeFile(files.key, a.privateKey);
  await writeFile(files.cert, a.certificate);
  await writeFile(files.otherKey, b.privateKey);
  await writeFile(files.otherCert, b.certificate);
  await writeFile(files.junk, 'not a pem');
}, 30_000);

afterAll(() => rm(dir, { recursive: true, force: true }));

const problem = (config: Parameters<typeof readSpKeys>[0]): string => {
  try {
    readSpKeys(config);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.join('\n');
  }
  throw new Error('expected a ConfigError');
};

describe('SP key pair', () => {
  it('is optional as a pair and read when both files are given', () => {
    expect(readSpKeys({})).toBeUndefined();
    expect(readSpKeys({ SAML_SP_KEY_FILE: files.key, SAML_SP_CERT_FILE: files.cert })).toMatchObject({ privateKey: expect.stringContaining('PRIVATE KEY'), certificate: expect.stringContaining('CERTIFICATE') });
  });

  it('names the variable: one of the two missing, unreadable, not PEM, or a key that does not match', () => {
    expect(problem({ SAML_SP_KEY_FILE: files.key })).toMatch(/^SAML_SP_CERT_FILE: required/);
    expect(problem({ SAML_SP_CERT_FILE: files.cert })).toMatch(/^SAML_SP_KEY_FILE: required/);
    expect(problem({ SAML_SP_KEY_FILE: path.join(dir, 'missing.key'), SAML_SP_CERT_FILE: files.cert })).toMatch(/^SAML_SP_KEY_FILE: cannot read .*ENOENT/);
    expect(problem({ SAML_SP_KEY_FILE: files.junk, SAML_SP_CERT_FILE: files.cert })).toMatch(/^SAML_SP_KEY_FILE: not a PEM private key/);
    expect(problem({ SAML_SP_KEY_FILE: files.key, SAML_SP_CERT_FILE: files.junk })).toMatch(/^SAML_SP_CERT_FILE: not a PEM X.509/);
    expect(problem({ SAML_SP_KEY_FILE: files.otherKey, SAML_SP_CERT_FILE: files.cert })).toMatch(/^SAML_SP_CERT_FILE: does not match/);
  });

  it('reads the rollover pair beside the active one, with the same checks', () => {
    const both = readSpKeys({ SAML_SP_KEY_FILE: files.key, SAML_SP_CERT_FILE: files.cert, SAML_SP_ROLLOVER_KEY_FILE: files.otherKey, SAML_SP_ROLLOVER_CERT_FILE: files.otherCert });
    expect(both?.rollover).toMatchObject({ privateKey: expect.stringContaining('PRIVATE KEY'), certificate: expect.stringContaining('CERTIFICATE') });
    expect(both?.rollover?.certificate).not.toBe(both?.certificate);
    expect(problem({ SAML_SP_ROLLOVER_KEY_FILE: files.otherKey, SAML_SP_ROLLOVER_CERT_FILE: files.otherCert })).toMatch(/^SAML_SP_ROLLOVER_KEY_FILE: needs SAML_SP_KEY_FILE/);
    expect(problem({ SAML_SP_KEY_FILE: files.key, SAML_SP_CERT_FILE: files.cert, SAML_SP_ROLLOVER_KEY_FILE: files.otherKey })).toMatch(/^SAML_SP_ROLLOVER_CERT_FILE: required/);
    expect(problem({ SAML_SP_KEY_FILE: files.key, SAML_SP_CERT_FILE: files.cert, SAML_SP_ROLLOVER_KEY_FILE: files.key, SAML_SP_ROLLOVER_CERT_FILE: files.otherCert })).toMatch(
      /^SAML_SP_ROLLOVER_CERT_FILE: does not match SAML_SP_ROLLOVER_KEY_FILE/,
    );
    expect(problem({ SAML_SP_KEY_FILE: files.key, SAML_SP_CERT_FILE: files.cert, SAML_SP_ROLLOVER_KEY_FILE: files.key, SAML_SP_ROLLOVER_CERT_FILE: files.cert })).toMatch(
      /^SAML_SP_ROLLOVER_CERT_FILE: is the active certificate/,
    );
  });
});
