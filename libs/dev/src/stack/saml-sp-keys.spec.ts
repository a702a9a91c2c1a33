import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureSamlSpKeyPair } from './saml-sp-keys';

jest.setTimeout(60_000);

let tmp: string;
beforeEach(() => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'secsvc-saml-sp-'));
});
afterEach(() => {
  rmSync(tmp, { recursive: true, force: true });
});

const mode = (file: string) => statSync(file).mode & 0o777;

describe('ensureSamlSpKeyPair', () => {
  it('generates a matching RSA 3072 key and a 10-year self-signed SHA-256 certificate, the key readable by the owner only', async () => {
    const dir = path.join(tmp, 'data', 'saml-sp');
    const pair = await ensureSamlSpKeyPair(dir, 'gateway.example.com');
    expect(pair).toEqual({ keyFile: path.join(dir, 'sp.key'), certFile: path.join(dir, 'sp.crt'), created: true });

    const key = createPrivateKey(readFileSync(pair.keyFile, 'utf8'));
    expect([key.asymmetricKeyType, key.asymmetricKeyDetails?.modulusLength]).toEqual(['rsa', 3072]);
    const cert = new X509Certificate(readFileSync(pair.certFile, 'utf8'));
    expect(cert.checkPrivateKey(key)).toBe(true);
    expect(cert.subject).toBe('CN=gateway.example.com');
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.ca).toBe(false);
    const years = (Date.parse(cert.validTo) - Date.parse(cert.validFrom)) / (365.25 * 86_400_000);
    expect(years).toBeGreaterThan(9.9);
    expect(years).toBeLessThan(10.1);
    expect(Date.parse(cert.validFrom)).toBeLessThanOrEqual(Date.now());
    // sha256WithRSAEncryption: OID 1.2.840.113549.1.1.11 (06 09 2a 86 48 86 f7 0d 01 01 0b) in the DER.
    expect(cert.raw.includes(Buffer.from('06092a864886f70d01010b', 'hex'))).toBe(true);

    expect(mode(pair.keyFile)).toBe(0o600);
    expect(mode(dir)).toBe(0o700);
    // Nothing left beside the pair: the temporary directory became `dir`.
    expect(readdirSync(path.join(tmp, 'data'))).toEqual(['saml-sp']);
    expect(readdirSync(dir).sort()).toEqual(['sp.crt', 'sp.key']);
  });

  it('reuses an existing pair unchanged', async () => {
    const dir = path.join(tmp, 'saml-sp');
    const first = await ensureSamlSpKeyPair(dir, '127.0.0.1');
    const before = [readFileSync(first.keyFile, 'utf8'), readFileSync(first.certFile, 'utf8')];
    const second = await ensureSamlSpKeyPair(dir, 'another-name');
    expect(second).toEqual({ keyFile: first.keyFile, certFile: first.certFile, created: false });
    expect([readFileSync(second.keyFile, 'utf8'), readFileSync(second.certFile, 'utf8')]).toEqual(before);
  });

  it('refuses half a pair, naming the missing file, and leaves the other one alone', async () => {
    const dir = path.join(tmp, 'saml-sp');
    const { keyFile, certFile } = await ensureSamlSpKeyPair(dir, '127.0.0.1');
    const key = readFileSync(keyFile, 'utf8');
    unlinkSync(certFile);
    await expect(ensureSamlSpKeyPair(dir, '127.0.0.1')).rejects.toThrow(`${certFile} is missing beside ${keyFile}`);
    expect(readFileSync(keyFile, 'utf8')).toBe(key);
    expect(readdirSync(dir)).toEqual(['sp.key']);

    // An operator's own certificate without its key.
    unlinkSync(keyFile);
    writeFileSync(certFile, 'operator certificate');
    await expect(ensureSamlSpKeyPair(dir, '127.0.0.1')).rejects.toThrow(`${keyFile} is missing beside ${certFile}`);
    expect(readFileSync(certFile, 'utf8')).toBe('operator certificate');
  });

  it('fills an empty directory, refuses one holding other files, and sweeps an interrupted attempt', async () => {
    const empty = path.join(tmp, 'empty');
    mkdirSync(empty, { mode: 0o755 });
    const leftover = path.join(tmp, '.empty.tmp-0123456789ab');
    mkdirSync(leftover);
    writeFileSync(path.join(leftover, 'sp.key'), 'half written');
    expect((await ensureSamlSpKeyPair(empty, '127.0.0.1')).created).toBe(true);
    expect(mode(empty)).toBe(0o700);
    expect(readdirSync(tmp).sort()).toEqual(['empty']);

    const busy = path.join(tmp, 'busy');
    mkdirSync(busy);
    writeFileSync(path.join(busy, 'notes.txt'), 'mine');
    await expect(ensureSamlSpKeyPair(busy, '127.0.0.1')).rejects.toThrow(`${busy} holds other files`);
    expect(readdirSync(busy)).toEqual(['notes.txt']);
    expect(readdirSync(tmp).sort()).toEqual(['busy', 'empty']);
  });
});
