/**
 * XML Encryption of SAML assertions (src/sso/xmlenc.ts) against vectors made by independent implementations: the
 * content key wrapped by the OpenSSL command line (every OAEP digest with every MGF1 digest, labels), the content
 * encrypted here with Node's AES; and the one-XML-parser rule for every SAML code path.
 */
import { execFileSync } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decryptElement, oaepDecode } from '../src/sso/xmlenc';
import { SamlRefusal } from '../src/sso/assertion';
import { selfSignedCertificate } from './support/saml-idp';

const XENC = 'http://www.w3.org/2001/04/xmlenc#';
const XENC11 = 'http://www.w3.org/2009/xmlenc11#';
const DIGEST_URI: Record<string, string> = {
  sha1: 'http://www.w3.org/2000/09/xmldsig#sha1',
  sha256: `${XENC}sha256`,
  sha384: 'http://www.w3.org/2001/04/xmldsig-more#sha384',
  sha512: `${XENC}sha512`,
};
const PLAIN = '<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_a1">vector</saml:Assertion>';
const OPEN = { cbcAllowed: () => true, checkPlaintext: () => undefined };
const STRICT = { cbcAllowed: () => false, checkPlaintext: () => undefined };

let dir: string;
let key: { privateKey: string; certificate: string };
beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'xmlenc-'));
  key = await selfSignedCertificate('sp.example.com');
  writeFileSync(path.join(dir, 'cert.pem'), key.certificate);
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** RSA-OAEP by the openssl CLI (not Node, not xml-encryption): the wrapped key, base64. */
function opensslWrap(secret: Buffer, digest: string, mgf: string, label?: Buffer): string {
  writeFileSync(path.join(dir, 'key.bin'), secret);
  const args = ['pkeyutl', '-encrypt', '-certin', '-inkey', path.join(dir, 'cert.pem'), '-in', path.join(dir, 'key.bin'), '-pkeyopt', 'rsa_padding_mode:oaep', '-pkeyopt', `rsa_oaep_md:${digest}`, '-pkeyopt', `rsa_mgf1_md:${mgf}`];
  if (label) args.push('-pkeyopt', `rsa_oaep_label:${label.toString('hex')}`);
  return execFileSync('openssl', args).toString('base64');
}

function encryptContent(cipher: string, secret: Buffer, plain: Buffer, padding?: Buffer): string {
  if (cipher.endsWith('gcm')) {
    const iv = randomBytes(12);
    const c = createCipheriv(cipher as 'aes-256-gcm', secret, iv);
    const body = Buffer.concat([c.update(plain), c.final()]);
    return Buffer.concat([iv, body, c.getAuthTag()]).toString('base64');
  }
  const iv = randomBytes(16);
  const c = createCipheriv(cipher, secret, iv);
  c.setAutoPadding(false);
  // XML Encryption's padding (ISO 10126): arbitrary bytes, the last one the count.
  const n = 16 - (plain.length % 16);
  const pad = padding ?? Buffer.concat([randomBytes(n - 1), Buffer.from([n])]);
  return Buffer.concat([iv, c.update(Buffer.concat([plain, pad])), c.final()]).toString('base64');
}

interface Vector {
  transport: string;
  digest?: string;
  mgf?: string;
  label?: Buffer;
  content?: string;
  /** Where the EncryptedKey sits: in KeyInfo (default), or beside the data with a RetrievalMethod. */
  placement?: 'keyinfo' | 'retrieval';
}

function vector(v: Vector, plain = Buffer.from(PLAIN)): string {
  const contentUri = v.content ?? `${XENC11}aes256-gcm`;
  const cipher = /aes(\d+)-(gcm|cbc)/.exec(contentUri)!;
  const secret = randomBytes(Number(cipher[1]) / 8);
  const wrapped = opensslWrap(secret, v.digest ?? 'sha1', v.transport.endsWith('mgf1p') ? 'sha1' : (v.mgf ?? 'sha1'), v.label);
  const method =
    `<xenc:EncryptionMethod Algorithm="${v.transport}">` +
    (v.digest ? `<ds:DigestMethod Algorithm="${DIGEST_URI[v.digest]}"/>` : '') +
    (v.mgf ? `<xenc11:MGF Algorithm="${XENC11}mgf1${v.mgf}"/>` : '') +
    (v.label ? `<xenc:OAEPparams>${v.label.toString('base64')}</xenc:OAEPparams>` : '') +
    `</xenc:EncryptionMethod>`;
  const encryptedKey = (id = '') => `<xenc:EncryptedKey${id}>${method}<xenc:CipherData><xenc:CipherValue>${wrapped}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedKey>`;
  const keyInfo = v.placement === 'retrieval' ? `<ds:RetrievalMethod URI="#k1" Type="${XENC}EncryptedKey"/>` : encryptedKey();
  const data =
    `<xenc:EncryptedData Type="${XENC}Element"><xenc:EncryptionMethod Algorithm="${contentUri}"/>` +
    `<ds:KeyInfo>${keyInfo}</ds:KeyInfo>` +
    `<xenc:CipherData><xenc:CipherValue>${encryptContent(`aes-${cipher[1]}-${cipher[2]}`, secret, plain)}</xenc:CipherValue></xenc:CipherData></xenc:EncryptedData>`;
  return (
    `<saml:EncryptedAssertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" xmlns:xenc="${XENC}" xmlns:xenc11="${XENC11}" xmlns:ds="http://www.w3.org/2000/09/xmldsig#">` +
    data +
    (v.placement === 'retrieval' ? encryptedKey(' Id="k1"') : '') +
    `</saml:EncryptedAssertion>`
  );
}

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof SamlRefusal) return err.reason;
    throw err;
  }
  throw new Error('not refused');
};

describe('key transport: RSA-OAEP with every OAEP digest and MGF1 digest (OpenSSL vectors)', () => {
  const digests = ['sha1', 'sha256', 'sha384', 'sha512'];
  it.each(digests)('rsa-oaep-mgf1p, OAEP digest %s (MGF1 fixed to SHA-1)', (digest) => {
    expect(decryptElement(vector({ transport: `${XENC}rsa-oaep-mgf1p`, digest }), key.privateKey, STRICT)).toBe(PLAIN);
  });
  const pairs = digests.flatMap((digest) => ['sha1', 'sha224', 'sha256', 'sha384', 'sha512'].map((mgf) => [digest, mgf] as const));
  it.each(pairs)('xmlenc11#rsa-oaep, OAEP digest %s, MGF1 %s', (digest, mgf) => {
    expect(decryptElement(vector({ transport: `${XENC11}rsa-oaep`, digest, mgf }), key.privateKey, STRICT)).toBe(PLAIN);
  });
  it('defaults: no DigestMethod is SHA-1, no MGF is MGF1-SHA-1', () => {
    expect(decryptElement(vector({ transport: `${XENC11}rsa-oaep` }), key.privateKey, STRICT)).toBe(PLAIN);
  });
  it('reads OAEPparams as the label, with equal and with different digests', () => {
    const label = Buffer.from('saml-label');
    expect(decryptElement(vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha256', mgf: 'sha256', label }), key.privateKey, STRICT)).toBe(PLAIN);
    expect(decryptElement(vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha512', mgf: 'sha1', label }), key.privateKey, STRICT)).toBe(PLAIN);
  });
  it('finds the EncryptedKey beside the data through a RetrievalMethod', () => {
    expect(decryptElement(vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha256', placement: 'retrieval' }), key.privateKey, STRICT)).toBe(PLAIN);
  });
});

describe('content: AES-GCM and AES-CBC', () => {
  it.each(['aes128-gcm', 'aes192-gcm', 'aes256-gcm'])('%s', (alg) => {
    expect(decryptElement(vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha256', content: `${XENC11}${alg}` }), key.privateKey, STRICT)).toBe(PLAIN);
  });
  it.each(['aes128-cbc', 'aes192-cbc', 'aes256-cbc'])('%s with ISO 10126 padding (random bytes, not PKCS#7), when the caller allows CBC', (alg) => {
    const xml = vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha256', content: `${XENC}${alg}` });
    expect(decryptElement(xml, key.privateKey, OPEN)).toBe(PLAIN);
    expect(refusal(() => decryptElement(xml, key.privateKey, STRICT))).toMatch(/^cbc_needs_signed_response/);
  });
});

describe('refusals', () => {
  it('rsa-1_5, unknown key transports, digests, MGFs and content algorithms, an MGF with rsa-oaep-mgf1p', () => {
    const good = vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha256' });
    expect(refusal(() => decryptElement(good.replace(`${XENC11}rsa-oaep`, `${XENC}rsa-1_5`), key.privateKey))).toMatch(/^key_transport_refused: rsa-1_5/);
    expect(refusal(() => decryptElement(good.replace(`${XENC11}rsa-oaep`, `${XENC}kw-aes256`), key.privateKey))).toMatch(/^unsupported_key_transport/);
    expect(refusal(() => decryptElement(good.replace(`${XENC}sha256`, `${XENC}ripemd160`), key.privateKey))).toMatch(/^unsupported_oaep_digest/);
    expect(refusal(() => decryptElement(vector({ transport: `${XENC11}rsa-oaep`, mgf: 'sha256' }).replace('mgf1sha256', 'mgf1md5'), key.privateKey))).toMatch(/^unsupported_mgf/);
    expect(refusal(() => decryptElement(good.replace(`${XENC11}aes256-gcm`, `${XENC}tripledes-cbc`), key.privateKey))).toMatch(/^unsupported_content_encryption/);
    const mgf1p = vector({ transport: `${XENC}rsa-oaep-mgf1p`, digest: 'sha256' }).replace('</xenc:EncryptionMethod>', `<xenc11:MGF Algorithm="${XENC11}mgf1sha256"/></xenc:EncryptionMethod>`);
    expect(refusal(() => decryptElement(mgf1p, key.privateKey))).toMatch(/^unsupported_key_transport: MGF/);
  });

  it('one answer for every cryptographic failure: another key, a wrong digest, tampered ciphertext or tag', async () => {
    const other = await selfSignedCertificate('other.example.com');
    const good = vector({ transport: `${XENC11}rsa-oaep`, digest: 'sha256', mgf: 'sha1' });
    expect(refusal(() => decryptElement(good, other.privateKey))).toBe('decryption_failed');
    // The digest named differs from the one used: OAEP decoding fails.
    expect(refusal(() => decryptElement(good.replace(`${XENC}sha256`, `${XENC}sha512`), key.privateKey))).toBe('decryption_failed');
    const value = /<xenc:EncryptedData.*<xenc:CipherValue>([^<]+)<\/xenc:CipherValue><\/xenc:CipherData><\/xenc:EncryptedData>/.exec(good)![1]!;
    const bytes = Buffer.from(value, 'base64');
    bytes[20]! ^= 1;
    expect(refusal(() => decryptElement(good.replace(value, bytes.toString('base64')), key.privateKey))).toBe('decryption_failed');
  });

  it('EME-OAEP decoding refuses a bad leading byte, label hash or separator', () => {
    expect(refusal(() => oaepDecode(Buffer.alloc(256, 1), 'sha256', 'sha1'))).toBe('decryption_failed');
    expect(refusal(() => oaepDecode(Buffer.alloc(256, 0), 'sha256', 'sha1'))).toBe('decryption_failed');
    expect(refusal(() => oaepDecode(Buffer.alloc(20), 'sha256', 'sha1'))).toBe('decryption_failed');
  });
});

describe('one XML parser for every SAML code path', () => {
  const root = path.resolve(__dirname, '../../..');
  /** Every installed @xmldom/xmldom, at any depth of any node_modules of the workspace. */
  function copies(dirPath: string, found: string[] = []): string[] {
    for (const entry of readdirSync(dirPath, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const full = path.join(dirPath, entry.name);
      if (entry.name === 'node_modules') {
        if (existsSync(path.join(full, '@xmldom/xmldom/package.json'))) found.push(path.join(full, '@xmldom/xmldom'));
        copies(full, found);
      } else if (dirPath.endsWith('node_modules') || dirPath.includes(`${path.sep}node_modules${path.sep}`) || ['apps', 'libs'].includes(path.basename(dirPath)) || dirPath === root) {
        if (!['.git', '.cache', 'dist', '.nx'].includes(entry.name)) copies(full, found);
      }
    }
    return found;
  }

  it('has a single copy of @xmldom/xmldom installed, read by the gateway, node-saml, xml-crypto and xml-encryption', () => {
    const installed = copies(root);
    expect(installed).toEqual([path.join(root, 'node_modules/@xmldom/xmldom')]);
    const resolveFrom = (pkg: string) => require.resolve('@xmldom/xmldom', { paths: [path.dirname(require.resolve(`${pkg}/package.json`))] });
    const ours = require.resolve('@xmldom/xmldom');
    for (const pkg of ['@node-saml/node-saml', 'xml-crypto', 'xml-encryption']) expect([pkg, resolveFrom(pkg)]).toEqual([pkg, ours]);
    // node-saml calls the same xml-encryption module whose decrypt src/sso/xmlenc.ts replaces.
    const fromNodeSaml = require.resolve('xml-encryption', { paths: [path.dirname(require.resolve('@node-saml/node-saml/package.json'))] });
    expect(fromNodeSaml).toBe(require.resolve('xml-encryption'));
  });

  it('imports no private module of a dependency', () => {
    const src = path.resolve(__dirname, '../src');
    const files = (readdirSync(src, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts'));
    const privateImports = files.flatMap((f) =>
      [...readFileSync(path.join(src, f), 'utf8').matchAll(/from '((?:@[^/'.][^/']*\/)?[^/'.][^/']*\/(?:lib|dist|src|build)\/[^']*)'/g)].map((m) => `${f}: ${m[1]}`),
    );
    expect(privateImports).toEqual([]);
  });
});
