import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

// A software WebAuthn authenticator and client in one, for tests: ES256 (P-256) keys from node:crypto, attestation
// "none", discoverable credentials, and knobs to misbehave (no user verification, a chosen signature counter, a
// tampered signature, another origin, RP ID or challenge than the options').

/** A CBOR data item this encoder writes: unsigned and negative integers, byte and text strings, arrays, maps. */
export type Cbor = number | Uint8Array | string | Cbor[] | Map<Cbor, Cbor>;

/** Minimal deterministic CBOR (RFC 8949): enough for attestation objects and COSE keys. */
export function encodeCbor(value: Cbor): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
    if (n < 0x10000) {
      const b = Buffer.alloc(3);
      b[0] = (major << 5) | 25;
      b.writeUInt16BE(n, 1);
      return b;
    }
    if (n < 0x100000000) {
      const b = Buffer.alloc(5);
      b[0] = (major << 5) | 26;
      b.writeUInt32BE(n, 1);
      return b;
    }
    const b = Buffer.alloc(9);
    b[0] = (major << 5) | 27;
    b.writeBigUInt64BE(BigInt(n), 1);
    return b;
  };
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError('only integers are encoded');
    return value >= 0 ? head(0, value) : head(1, -1 - value);
  }
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  if (Array.isArray(value)) return Buffer.concat([head(4, value.length), ...value.map(encodeCbor)]);
  const entries = [...value.entries()].map(([k, v]) => [encodeCbor(k), encodeCbor(v)] as const);
  // canonical order: shorter encoded keys first, then bytewise
  entries.sort(([a], [b]) => a.length - b.length || Buffer.compare(a, b));
  return Buffer.concat([head(5, entries.length), ...entries.flat()]);
}

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_BE = 0x08;
const FLAG_BS = 0x10;
const FLAG_AT = 0x40;

/** What an authenticator holds of one credential. */
export interface SoftCredential {
  id: Buffer;
  rpId: string;
  userHandle: string; // base64url, as the options carried it
  privateKey: KeyObject;
  /** The COSE public key the attestation carried. */
  cosePublicKey: Buffer;
  counter: number;
}

/** Per-ceremony misbehaviour. */
export interface Knobs {
  /** Set the UV flag (default: the authenticator's `userVerified`). */
  userVerified?: boolean;
  /** Set the UP flag (default true). */
  userPresent?: boolean;
  /** Report this signature counter (and keep it), e.g. a stale value as a clone would. */
  counter?: number;
  /** Flip a bit of the signature's last byte (still valid DER, no longer a valid signature). */
  tamperSignature?: boolean;
  /** Sign with this origin / RP ID / challenge instead of the authenticator's and the options'. */
  origin?: string;
  rpId?: string;
  challenge?: string;
  /** Use this credential (base64url id) in `get`, instead of the first one allowed. */
  credentialId?: string;
}

export class SoftAuthenticator {
  readonly rpId: string;
  readonly origin: string;
  /** Whether the "user" passes verification (the UV flag). */
  userVerified: boolean;
  /** 'increment': the counter goes up by one per signature; 'zero': always 0, as synced passkeys report. */
  readonly counterMode: 'increment' | 'zero';
  /** Backup eligible and backed up (a synced passkey), or single-device. */
  readonly backedUp: boolean;
  readonly aaguid: Buffer;
  readonly credentials: SoftCredential[] = [];

  constructor(opts: { rpId: string; origin: string; userVerified?: boolean; counterMode?: 'increment' | 'zero'; backedUp?: boolean; aaguid?: Buffer }) {
    this.rpId = opts.rpId;
    this.origin = opts.origin;
    this.userVerified = opts.userVerified ?? true;
    this.counterMode = opts.counterMode ?? 'increment';
    this.backedUp = opts.backedUp ?? false;
    this.aaguid = opts.aaguid ?? Buffer.alloc(16);
  }

  /** navigator.credentials.create() followed by the credential's toJSON(). */
  create(options: PublicKeyCredentialCreationOptionsJSON, knobs: Knobs = {}): RegistrationResponseJSON {
    const rpId = knobs.rpId ?? options.rp.id ?? this.rpId;
    if (!options.pubKeyCredParams.some((p) => p.type === 'public-key' && p.alg === -7)) throw new Error('NotSupportedError: ES256 is not offered');
    const excluded = new Set((options.excludeCredentials ?? []).map((c) => c.id));
    if (this.credentials.some((c) => c.rpId === rpId && excluded.has(c.id.toString('base64url')))) {
      throw new Error('InvalidStateError: a credential of this authenticator is excluded');
    }

    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cosePublicKey = encodeCbor(
      new Map<Cbor, Cbor>([
        [1, 2], // kty: EC2
        [3, -7], // alg: ES256
        [-1, 1], // crv: P-256
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const credential: SoftCredential = { id: randomBytes(32), rpId, userHandle: options.user.id, privateKey, cosePublicKey, counter: 0 };
    // a discoverable credential replaces the one of the same user on the same RP (WebAuthn §6.3.2 step 7)
    const same = this.credentials.findIndex((c) => c.rpId === rpId && c.userHandle === options.user.id);
    if (same >= 0) this.credentials.splice(same, 1);
    this.credentials.push(credential);

    const counter = this.nextCounter(credential, knobs, 0);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(credential.id.length);
    const authData = Buffer.concat([this.authDataHead(rpId, counter, knobs, FLAG_AT), this.aaguid, idLength, credential.id, cosePublicKey]);
    const attestationObject = encodeCbor(
      new Map<Cbor, Cbor>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', authData],
      ]),
    );
    const clientDataJSON = this.clientData('webauthn.create', knobs.challenge ?? options.challenge, knobs);
    const id = credential.id.toString('base64url');
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        attestationObject: attestationObject.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        transports: ['internal', 'hybrid'],
        publicKeyAlgorithm: -7,
        publicKey: publicKey.export({ format: 'der', type: 'spki' }).toString('base64url'),
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: { credProps: { rk: true } },
    };
  }

  /** navigator.credentials.get() followed by the credential's toJSON(). */
  get(options: PublicKeyCredentialRequestOptionsJSON, knobs: Knobs = {}): AuthenticationResponseJSON {
    const rpId = knobs.rpId ?? options.rpId ?? this.rpId;
    const allowed = new Set((options.allowCredentials ?? []).map((c) => c.id));
    const candidates = this.credentials.filter(
      (c) => (c.rpId === rpId || knobs.rpId !== undefined) && (allowed.size === 0 || allowed.has(c.id.toString('base64url'))),
    );
    const credential = knobs.credentialId ? candidates.find((c) => c.id.toString('base64url') === knobs.credentialId) : candidates[0];
    if (!credential) throw new Error('NotAllowedError: no credential of this authenticator is allowed');

    const counter = this.nextCounter(credential, knobs, credential.counter + 1);
    const authData = this.authDataHead(rpId, counter, knobs, 0);
    const clientDataJSON = this.clientData('webauthn.get', knobs.challenge ?? options.challenge, knobs);
    const signed = Buffer.concat([authData, createHash('sha256').update(clientDataJSON).digest()]);
    const signature = sign('sha256', signed, credential.privateKey); // DER, as WebAuthn wants ES256 signatures
    if (knobs.tamperSignature) signature[signature.length - 1] ^= 0x01;
    const id = credential.id.toString('base64url');
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: clientDataJSON.toString('base64url'),
        authenticatorData: authData.toString('base64url'),
        signature: signature.toString('base64url'),
        userHandle: credential.userHandle,
      },
      authenticatorAttachment: 'platform',
      clientExtensionResults: {},
    };
  }

  private nextCounter(credential: SoftCredential, knobs: Knobs, incremented: number): number {
    const counter = knobs.counter ?? (this.counterMode === 'zero' ? 0 : incremented);
    credential.counter = counter;
    return counter;
  }

  private authDataHead(rpId: string, counter: number, knobs: Knobs, extraFlags: number): Buffer {
    let flags = extraFlags;
    if (knobs.userPresent ?? true) flags |= FLAG_UP;
    if (knobs.userVerified ?? this.userVerified) flags |= FLAG_UV;
    if (this.backedUp) flags |= FLAG_BE | FLAG_BS;
    const head = Buffer.alloc(37);
    createHash('sha256').update(rpId, 'utf8').digest().copy(head, 0);
    head[32] = flags;
    head.writeUInt32BE(counter >>> 0, 33);
    return head;
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, knobs: Knobs): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin: knobs.origin ?? this.origin, crossOrigin: false }), 'utf8');
  }
}
