import { AsyncLocalStorage } from 'node:async_hooks';
import { constants, createDecipheriv, createHash, privateDecrypt, timingSafeEqual } from 'node:crypto';
// The module object itself (not an ES namespace copy): its decrypt is replaced below.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import xmlenc = require('xml-encryption');
import { SamlRefusal } from './assertion';
import { childrenNS, parseXml } from './xml';

// XML Encryption as IdPs send it: the content key wrapped with RSA-OAEP (XML Encryption 1.0 rsa-oaep-mgf1p, or
// 1.1 rsa-oaep with any MGF1 digest), each with any OAEP digest, the assertion in AES-GCM or AES-CBC.
// rsa-1_5 is refused (Bleichenbacher's oracle). xml-encryption reads neither SHA-384 OAEP digests nor (by
// default) AES-CBC and cannot be told otherwise through node-saml, so decryption is done here.

const XENC = 'http://www.w3.org/2001/04/xmlenc#';
const XENC11 = 'http://www.w3.org/2009/xmlenc11#';
const DS = 'http://www.w3.org/2000/09/xmldsig#';

export const RSA_OAEP_MGF1P = `${XENC}rsa-oaep-mgf1p`;
export const RSA_OAEP = `${XENC11}rsa-oaep`;
/** The key-transport algorithms accepted (advertised in SP metadata). */
export const KEY_TRANSPORT_ALGORITHMS = [RSA_OAEP, RSA_OAEP_MGF1P];

interface Content {
  cipher: 'aes-128-gcm' | 'aes-192-gcm' | 'aes-256-gcm' | 'aes-128-cbc' | 'aes-192-cbc' | 'aes-256-cbc';
  keyBytes: number;
  gcm: boolean;
}
const CONTENT: Record<string, Content> = {
  [`${XENC11}aes256-gcm`]: { cipher: 'aes-256-gcm', keyBytes: 32, gcm: true },
  [`${XENC11}aes192-gcm`]: { cipher: 'aes-192-gcm', keyBytes: 24, gcm: true },
  [`${XENC11}aes128-gcm`]: { cipher: 'aes-128-gcm', keyBytes: 16, gcm: true },
  [`${XENC}aes256-cbc`]: { cipher: 'aes-256-cbc', keyBytes: 32, gcm: false },
  [`${XENC}aes192-cbc`]: { cipher: 'aes-192-cbc', keyBytes: 24, gcm: false },
  [`${XENC}aes128-cbc`]: { cipher: 'aes-128-cbc', keyBytes: 16, gcm: false },
};
/** The content-encryption algorithms accepted, preferred first (advertised in SP metadata). */
export const CONTENT_ALGORITHMS = Object.keys(CONTENT);

/** OAEP message digests (DigestMethod of the key's EncryptionMethod; SHA-1 when absent). */
const OAEP_DIGESTS: Record<string, string> = {
  [`${DS}sha1`]: 'sha1',
  [`${XENC}sha256`]: 'sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384': 'sha384',
  [`${XENC}sha512`]: 'sha512',
};
/** MGF1 digests of xmlenc11#rsa-oaep (its MGF child; MGF1 with SHA-1 when absent). */
const MGF_DIGESTS: Record<string, string> = {
  [`${XENC11}mgf1sha1`]: 'sha1',
  [`${XENC11}mgf1sha224`]: 'sha224',
  [`${XENC11}mgf1sha256`]: 'sha256',
  [`${XENC11}mgf1sha384`]: 'sha384',
  [`${XENC11}mgf1sha512`]: 'sha512',
};

function child(parent: Element, ns: string, name: string): Element | undefined {
  return childrenNS(parent, ns, name)[0];
}

/** Every decryption failure reads the same: no oracle on which step failed. */
const failed = () => new SamlRefusal('decryption_failed');

function mgf1(seed: Buffer, length: number, hash: string): Buffer {
  const blocks: Buffer[] = [];
  for (let counter = 0, size = 0; size < length; counter++) {
    const c = Buffer.alloc(4);
    c.writeUInt32BE(counter);
    const block = createHash(hash).update(seed).update(c).digest();
    blocks.push(block);
    size += block.length;
  }
  return Buffer.concat(blocks).subarray(0, length);
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

/**
 * EME-OAEP decoding (RFC 8017 7.1.2) of a raw RSA block, for an MGF1 digest other than the OAEP digest (Node's
 * RSA-OAEP ties the two together). Every check runs before the one verdict.
 */
export function oaepDecode(em: Buffer, oaepHash: string, mgfHash: string, label: Buffer = Buffer.alloc(0)): Buffer {
  const lHash = createHash(oaepHash).update(label).digest();
  const hLen = lHash.length;
  if (em.length < 2 * hLen + 2) throw failed();
  const maskedSeed = em.subarray(1, 1 + hLen);
  const maskedDb = em.subarray(1 + hLen);
  const seed = xor(maskedSeed, mgf1(maskedDb, hLen, mgfHash));
  const db = xor(maskedDb, mgf1(seed, maskedDb.length, mgfHash));
  let bad = em[0]! !== 0 ? 1 : 0;
  bad |= timingSafeEqual(db.subarray(0, hLen), lHash) ? 0 : 1;
  // The first non-zero byte after lHash must be 0x01; the message follows it.
  let separator = -1;
  for (let i = hLen; i < db.length; i++) {
    const found = separator < 0 && db[i] !== 0;
    if (found) {
      bad |= db[i] !== 1 ? 1 : 0;
      separator = i;
    }
  }
  if (bad || separator < 0) throw failed();
  return db.subarray(separator + 1);
}

function unwrapKey(encryptedKey: Element, privateKey: string): Buffer {
  const method = child(encryptedKey, XENC, 'EncryptionMethod');
  const algorithm = method?.getAttribute('Algorithm') ?? '';
  if (algorithm === `${XENC}rsa-1_5`) throw new SamlRefusal('key_transport_refused: rsa-1_5 (use RSA-OAEP)');
  if (!KEY_TRANSPORT_ALGORITHMS.includes(algorithm)) throw new SamlRefusal(`unsupported_key_transport: ${algorithm.slice(0, 100)}`);
  const digestUri = child(method!, DS, 'DigestMethod')?.getAttribute('Algorithm');
  const oaepHash = digestUri ? OAEP_DIGESTS[digestUri] : 'sha1';
  if (!oaepHash) throw new SamlRefusal(`unsupported_oaep_digest: ${digestUri!.slice(0, 100)}`);
  const mgf = child(method!, XENC11, 'MGF');
  // rsa-oaep-mgf1p fixes MGF1 to SHA-1 (XML Encryption 1.1 5.5.2); an MGF child is only for xmlenc11#rsa-oaep.
  if (mgf && algorithm === RSA_OAEP_MGF1P) throw new SamlRefusal('unsupported_key_transport: MGF with rsa-oaep-mgf1p');
  const mgfHash = mgf ? MGF_DIGESTS[mgf.getAttribute('Algorithm') ?? ''] : 'sha1';
  if (!mgfHash) throw new SamlRefusal(`unsupported_mgf: ${(mgf!.getAttribute('Algorithm') ?? '').slice(0, 100)}`);
  const params = child(method!, XENC, 'OAEPparams')?.textContent;
  const label = params ? Buffer.from(params.trim(), 'base64') : Buffer.alloc(0);
  const cipherValue = childText(encryptedKey);
  try {
    if (mgfHash === oaepHash) {
      return privateDecrypt({ key: privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash, ...(label.length && { oaepLabel: label }) }, cipherValue);
    }
    return oaepDecode(privateDecrypt({ key: privateKey, padding: constants.RSA_NO_PADDING }, cipherValue), oaepHash, mgfHash, label);
  } catch {
    throw failed();
  }
}

/** CipherData/CipherValue, base64 (CipherReference, which would fetch a URL, is not read). */
function childText(encrypted: Element): Buffer {
  const data = child(encrypted, XENC, 'CipherData');
  const value = data && child(data, XENC, 'CipherValue');
  if (!value) throw new SamlRefusal('unsupported_cipher_data');
  return Buffer.from((value.textContent ?? '').replace(/\s+/g, ''), 'base64');
}

/** The EncryptedKeys that may hold the content key: inside KeyInfo, referenced from it, or beside the data. */
function encryptedKeysOf(container: Element, data: Element): Element[] {
  const keyInfo = child(data, DS, 'KeyInfo');
  const inside = keyInfo ? childrenNS(keyInfo, XENC, 'EncryptedKey') : [];
  if (inside.length) return inside;
  const siblings = childrenNS(container, XENC, 'EncryptedKey');
  const uri = keyInfo && child(keyInfo, DS, 'RetrievalMethod')?.getAttribute('URI');
  if (uri) return siblings.filter((k) => `#${k.getAttribute('Id') ?? ''}` === uri);
  return siblings;
}

function decryptContent(content: Content, key: Buffer, data: Buffer): string {
  if (key.length !== content.keyBytes) throw failed();
  try {
    if (content.gcm) {
      if (data.length < 28) throw failed();
      const decipher = createDecipheriv(content.cipher as 'aes-256-gcm', key, data.subarray(0, 12));
      decipher.setAuthTag(data.subarray(data.length - 16));
      return Buffer.concat([decipher.update(data.subarray(12, data.length - 16)), decipher.final()]).toString('utf8');
    }
    // XML Encryption's padding: the last byte is the padding length; the others are arbitrary (not PKCS#7).
    if (data.length < 32 || data.length % 16 !== 0) throw failed();
    const decipher = createDecipheriv(content.cipher, key, data.subarray(0, 16));
    decipher.setAutoPadding(false);
    const plain = Buffer.concat([decipher.update(data.subarray(16)), decipher.final()]);
    const pad = plain[plain.length - 1]!;
    if (pad < 1 || pad > 16) throw failed();
    return plain.subarray(0, plain.length - pad).toString('utf8');
  } catch {
    throw failed();
  }
}

/** What the caller of node-saml knows that node-saml's call into the decryption cannot say. */
export interface DecryptionPolicy {
  /**
   * AES-CBC content only when the Response's signature (checked before) covers the ciphertext: CBC without
   * integrity is a padding oracle (Jager and Somorovsky, 2011). GCM carries its own integrity.
   */
  cbcAllowed(): boolean;
  /** Checks the decrypted assertion (its signature algorithms) before node-saml reads it. */
  checkPlaintext(xml: string): void;
}

const policies = new AsyncLocalStorage<DecryptionPolicy>();
const STRICT: DecryptionPolicy = { cbcAllowed: () => false, checkPlaintext: () => undefined };

/**
 * Decrypts an EncryptedAssertion (or bare EncryptedData) with the SP's private key; each EncryptedKey present is
 * tried (an IdP may wrap the key for several recipients).
 */
export function decryptElement(xml: string, privateKey: string, policy: DecryptionPolicy = policies.getStore() ?? STRICT): string {
  let container: Element;
  try {
    container = parseXml(xml).documentElement as unknown as Element;
  } catch {
    throw new SamlRefusal('malformed_xml');
  }
  const datas = container.localName === 'EncryptedData' && container.namespaceURI === XENC ? [container] : childrenNS(container, XENC, 'EncryptedData');
  if (datas.length !== 1) throw new SamlRefusal('expected_one_encrypted_data');
  const encryptedData = datas[0]!;
  const algorithm = child(encryptedData, XENC, 'EncryptionMethod')?.getAttribute('Algorithm') ?? '';
  const content = CONTENT[algorithm];
  if (!content) throw new SamlRefusal(`unsupported_content_encryption: ${algorithm.slice(0, 100)}`);
  if (!content.gcm && !policy.cbcAllowed()) throw new SamlRefusal('cbc_needs_signed_response: AES-CBC content is accepted only inside a signed Response (sign the response, or use AES-GCM)');
  const keys = encryptedKeysOf(container, encryptedData);
  if (!keys.length) throw new SamlRefusal('no_encrypted_key');
  let refusal: SamlRefusal | undefined;
  for (const key of keys) {
    let symmetric: Buffer;
    try {
      symmetric = unwrapKey(key, privateKey);
    } catch (err) {
      refusal = err as SamlRefusal;
      continue;
    }
    const plaintext = decryptContent(content, symmetric, childText(encryptedData));
    policy.checkPlaintext(plaintext);
    return plaintext;
  }
  throw refusal!;
}

/** Runs node-saml's validation with this policy for the decryptions it does. */
export function withDecryptionPolicy<T>(policy: DecryptionPolicy, fn: () => Promise<T>): Promise<T> {
  return policies.run(policy, fn);
}

// node-saml decrypts an EncryptedAssertion by calling xml-encryption's `decrypt(xml, { key }, callback)` through the
// module object, at each call, with no way to pass options. The (single, see package.json overrides) module
// instance's decrypt is this module's; the test suite checks node-saml goes through it.
(xmlenc as { decrypt: typeof xmlenc.decrypt }).decrypt = (xml, options, callback) => {
  let result: string;
  try {
    result = decryptElement(xml, String(options.key));
  } catch (err) {
    callback(err as Error, '');
    return;
  }
  callback(null, result);
};
