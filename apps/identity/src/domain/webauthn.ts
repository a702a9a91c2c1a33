import { isId } from '@secsvc/shared';
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { decodeAttestationObject, parseAuthenticatorData } from '@simplewebauthn/server/helpers';
import { CHALLENGE_TTL_SECONDS } from './mfa';

// Passkeys (WebAuthn) over @simplewebauthn/server, without I/O: the options of the two ceremonies and the
// verification of their answers. Everything a browser sends is untrusted: it is read once, field by field, into a
// fresh plain object (so a getter cannot answer differently the second time), bounded in size, checked for strict
// base64url, and only then handed to the library. Every refusal is a WebAuthnError with a reason.

export interface RelyingParty {
  /** The RP ID: a registrable domain suffix of the origins (`example.com`). */
  id: string;
  /** The name authenticators show. */
  name: string;
  /** The exact origins ceremonies may run on (`https://login.example.com`). */
  origins: string[];
}

/** A stored passkey as the options of a ceremony name it. */
export type StoredCredentialRef = { id: string /* base64url */; transports: string[] };

/** A passkey accepted at registration: what to store. */
export type VerifiedCredential = {
  credentialId: string /* base64url */;
  /** The COSE public key, as the authenticator sent it (what verifyAuthentication needs). */
  publicKey: Buffer;
  counter: number;
  transports: string[];
  aaguid: string;
  backedUp: boolean;
  deviceType: string;
  userVerified: boolean;
};

export const WEBAUTHN_FAILURES = ['malformed', 'challenge', 'origin', 'rp', 'user_verification', 'signature', 'counter', 'unknown'] as const;
export type WebAuthnFailure = (typeof WEBAUTHN_FAILURES)[number];

/** A refused WebAuthn response. `reason` says which check refused it; `cause` keeps the library's error, if any. */
export class WebAuthnError extends Error {
  constructor(
    readonly reason: WebAuthnFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'WebAuthnError';
  }
}

/** COSE algorithms offered and accepted, in order of preference: ES256, EdDSA, RS256 (Windows Hello). */
export const SUPPORTED_ALGORITHMS = [-7, -8, -257];
const TIMEOUT_MS = CHALLENGE_TTL_SECONDS * 1000;
const KNOWN_TRANSPORTS = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb']);

// Bounds, in base64url characters. A credential id is at most 1023 bytes, a user handle at most 64 (WebAuthn §5.4.3).
const MAX_CREDENTIAL_ID = 1364;
const MAX_USER_HANDLE_BYTES = 64;
const MAX_CLIENT_DATA = 16 * 1024;
const MAX_ATTESTATION_OBJECT = 128 * 1024; // attestation statements carry certificate chains
const MAX_AUTHENTICATOR_DATA = 16 * 1024;
const MAX_SIGNATURE = 8 * 1024;
const MAX_TRANSPORTS = 16;

// ---------------------------------------------------------------------------------------------------------------
// User handles

/** The WebAuthn user handle of a user: the UTF-8 bytes of our user id, base64url (at most 64 bytes, as WebAuthn allows). */
export function userHandleOf(userId: string): string {
  const bytes = Buffer.from(userId, 'utf8');
  if (bytes.length === 0 || bytes.length > MAX_USER_HANDLE_BYTES) throw new RangeError('a user id must be 1 to 64 bytes to be a WebAuthn user handle');
  return bytes.toString('base64url');
}

/** The user id a user handle was made from, or undefined when it cannot be one of ours. */
export function userIdOfHandle(handle: string): string | undefined {
  const bytes = base64urlOrUndefined(handle, Math.ceil((MAX_USER_HANDLE_BYTES * 4) / 3));
  if (!bytes || bytes.length === 0) return undefined;
  try {
    const id = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    // Only a user id can be one (no NUL or other bytes a database refuses: an anonymous caller chooses it).
    return isId('user', id) ? id : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Options

/** Creation options for a new discoverable passkey of `user` with user verification; `exclude`: their passkeys. */
export async function registrationOptions(
  rp: RelyingParty,
  user: { id: string /* our user id */; name: string /* email */; displayName: string },
  exclude: StoredCredentialRef[],
): Promise<{ options: PublicKeyCredentialCreationOptionsJSON; challenge: string }> {
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userID: new Uint8Array(Buffer.from(userHandleOf(user.id), 'base64url')),
    userName: user.name,
    userDisplayName: user.displayName,
    timeout: TIMEOUT_MS,
    attestationType: 'none',
    excludeCredentials: exclude.map((c) => ({ id: c.id, transports: knownTransports(c.transports) })),
    // a fresh object each time: the library writes requireResidentKey into it
    authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'required' },
    supportedAlgorithmIDs: [...SUPPORTED_ALGORITHMS],
  });
  return { options, challenge: options.challenge };
}

/** Request options with user verification; `allow` empty: a discoverable login, any passkey of the RP. */
export async function authenticationOptions(
  rp: RelyingParty,
  allow: StoredCredentialRef[],
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; challenge: string }> {
  const options = await generateAuthenticationOptions({
    rpID: rp.id,
    timeout: TIMEOUT_MS,
    userVerification: 'required',
    allowCredentials: allow.length ? allow.map((c) => ({ id: c.id, transports: knownTransports(c.transports) })) : undefined,
  });
  return { options, challenge: options.challenge };
}

// ---------------------------------------------------------------------------------------------------------------
// Safe readers (to find the credential before verifying)

/** The credential id (base64url) an authentication response claims, or undefined when there is none to read. */
export function credentialIdOf(response: unknown): string | undefined {
  try {
    if (!isRecord(response)) return undefined;
    const id: unknown = response.id;
    return typeof id === 'string' && id.length > 0 && base64urlOrUndefined(id, MAX_CREDENTIAL_ID) ? id : undefined;
  } catch {
    return undefined; // a getter that throws
  }
}

/** The user handle (base64url) a discoverable passkey returned, or undefined. Map it with userIdOfHandle. */
export function userHandleOfResponse(response: unknown): string | undefined {
  try {
    if (!isRecord(response)) return undefined;
    const inner: unknown = response.response;
    if (!isRecord(inner)) return undefined;
    const handle: unknown = inner.userHandle;
    if (typeof handle !== 'string' || handle.length === 0) return undefined;
    return base64urlOrUndefined(handle, Math.ceil((MAX_USER_HANDLE_BYTES * 4) / 3)) ? handle : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Registration

/** Verifies a registration response (user verification required) against the challenge of its options. */
export async function verifyRegistration(rp: RelyingParty, response: unknown, expectedChallenge: string): Promise<VerifiedCredential> {
  checkExpectedChallenge(expectedChallenge);
  const parsed = readRegistration(response);
  checkClientData(parsed.clientData, 'webauthn.create', expectedChallenge, rp);

  let result: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
  try {
    result = await verifyRegistrationResponse({
      response: parsed.json,
      expectedChallenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      requireUserPresence: true,
      requireUserVerification: true,
      supportedAlgorithmIDs: [...SUPPORTED_ALGORITHMS],
    });
  } catch (err) {
    throw classify(err, 'unknown');
  }
  if (!result.verified) throw new WebAuthnError('signature', 'the attestation statement did not verify');
  const info = result.registrationInfo;
  // The library takes the credential id from the authenticator data and never compares it with the response's id.
  if (info.credential.id !== parsed.json.id) throw new WebAuthnError('malformed', 'the credential id differs from the authenticator data');
  if (!info.userVerified) throw new WebAuthnError('user_verification', 'the user was not verified');
  return {
    credentialId: info.credential.id,
    publicKey: Buffer.from(info.credential.publicKey),
    counter: info.credential.counter,
    transports: parsed.transports,
    aaguid: info.aaguid,
    backedUp: info.credentialBackedUp,
    deviceType: info.credentialDeviceType,
    userVerified: info.userVerified,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Authentication

/**
 * Verifies an assertion of a stored credential (user verification required): its new signature counter.
 * A counter that does not increase while either counter is non-zero means a cloned authenticator ('counter').
 * The caller found `credential` by credentialIdOf(response), among the passkeys of the user it authenticates.
 */
export async function verifyAuthentication(
  rp: RelyingParty,
  response: unknown,
  expectedChallenge: string,
  credential: { id: string; publicKey: Buffer; counter: number; transports: string[] },
): Promise<{ newCounter: number; userVerified: boolean }> {
  checkExpectedChallenge(expectedChallenge);
  if (!Number.isSafeInteger(credential.counter) || credential.counter < 0 || credential.counter > 0xffffffff) {
    throw new RangeError('the stored signature counter must be an unsigned 32-bit integer');
  }
  const parsed = readAuthentication(response);
  if (parsed.json.id !== credential.id) throw new WebAuthnError('malformed', 'the response is for another credential');
  checkClientData(parsed.clientData, 'webauthn.get', expectedChallenge, rp);

  let result: Awaited<ReturnType<typeof verifyAuthenticationResponse>>;
  try {
    result = await verifyAuthenticationResponse({
      response: parsed.json,
      expectedChallenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      requireUserVerification: true,
      // The library compares the counters BEFORE it checks the signature, so a forged assertion with a low counter
      // would be reported as a clone. It gets 0 here (which disables its comparison) and the counters are compared
      // below, once the signature is known to be the authenticator's.
      credential: { id: credential.id, publicKey: new Uint8Array(credential.publicKey), counter: 0, transports: credential.transports },
    });
  } catch (err) {
    // What is left after the checks above and the messages classify knows is the signature's decoding and check.
    throw classify(err, 'signature');
  }
  if (!result.verified) throw new WebAuthnError('signature', 'the signature did not verify');
  const { newCounter, userVerified } = result.authenticationInfo;
  if (!userVerified) throw new WebAuthnError('user_verification', 'the user was not verified');
  if ((newCounter > 0 || credential.counter > 0) && newCounter <= credential.counter) {
    throw new WebAuthnError('counter', `the signature counter did not increase (${newCounter} after ${credential.counter}): a cloned authenticator?`);
  }
  return { newCounter, userVerified };
}

// ---------------------------------------------------------------------------------------------------------------
// Reading untrusted responses

type ClientData = { type: string; challenge: string; origin: string; crossOrigin: boolean; topOrigin?: string };

const malformed = (message: string, cause?: unknown) => new WebAuthnError('malformed', message, cause === undefined ? undefined : { cause });

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The bytes of a canonical, unpadded base64url string of at most `maxChars` characters, else undefined. */
function base64urlOrUndefined(value: string, maxChars: number): Buffer | undefined {
  if (value.length > maxChars || value.length % 4 === 1 || !/^[A-Za-z0-9_-]*$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  return bytes.toString('base64url') === value ? bytes : undefined;
}

function base64urlField(value: unknown, field: string, maxChars: number): { text: string; bytes: Buffer } {
  if (typeof value !== 'string') throw malformed(`${field} must be a base64url string`);
  if (value.length === 0) throw malformed(`${field} is empty`);
  const bytes = base64urlOrUndefined(value, maxChars);
  if (!bytes) throw malformed(`${field} must be base64url (at most ${maxChars} characters)`);
  return { text: value, bytes };
}

/** id, rawId, type and the inner response object, common to both ceremonies. */
function readEnvelope(response: unknown): { id: string; inner: Record<string, unknown> } {
  if (!isRecord(response)) throw malformed('the credential must be an object');
  const id = base64urlField(response.id, 'id', MAX_CREDENTIAL_ID).text;
  const rawId: unknown = response.rawId;
  if (rawId !== id) throw malformed('rawId must equal id');
  if (response.type !== 'public-key') throw malformed('type must be "public-key"');
  const inner: unknown = response.response;
  if (!isRecord(inner)) throw malformed('response must be an object');
  return { id, inner };
}

function readClientData(bytes: Buffer): ClientData {
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (err) {
    throw malformed('clientDataJSON is not JSON', err);
  }
  if (!isRecord(data)) throw malformed('clientDataJSON must be a JSON object');
  const { type, challenge, origin, crossOrigin, topOrigin } = data;
  if (typeof type !== 'string' || typeof challenge !== 'string' || typeof origin !== 'string') {
    throw malformed('clientDataJSON must have string type, challenge and origin');
  }
  if (crossOrigin !== undefined && typeof crossOrigin !== 'boolean') throw malformed('clientDataJSON crossOrigin must be a boolean');
  if (topOrigin !== undefined && typeof topOrigin !== 'string') throw malformed('clientDataJSON topOrigin must be a string');
  if (data.tokenBinding !== undefined && !isRecord(data.tokenBinding)) throw malformed('clientDataJSON tokenBinding must be an object');
  return { type, challenge, origin, crossOrigin: crossOrigin === true, topOrigin };
}

/** The authenticator data, parsed by the library's own parser (on a copy: it patches a Firefox quirk in place). */
function readAuthenticatorData(bytes: Uint8Array): ReturnType<typeof parseAuthenticatorData> {
  let parsed: ReturnType<typeof parseAuthenticatorData>;
  try {
    parsed = parseAuthenticatorData(new Uint8Array(bytes));
  } catch (err) {
    throw malformed('the authenticator data cannot be parsed', err);
  }
  if (parsed.flags.bs && !parsed.flags.be) throw malformed('the authenticator data says backed up but not backup eligible');
  return parsed;
}

function checkExpectedChallenge(expected: string): void {
  // an empty expectation would accept an empty challenge
  if (typeof expected !== 'string' || expected.length === 0) throw new WebAuthnError('challenge', 'no challenge was issued');
}

/** The client data's checks in the order of WebAuthn §7.1/§7.2: type, challenge, origin, (top) origin. */
function checkClientData(clientData: ClientData, type: 'webauthn.create' | 'webauthn.get', expectedChallenge: string, rp: RelyingParty): void {
  if (clientData.type !== type) throw malformed(`clientDataJSON type must be ${type}`);
  if (clientData.challenge !== expectedChallenge) throw new WebAuthnError('challenge', 'the challenge is not the one issued');
  if (!rp.origins.includes(clientData.origin)) throw new WebAuthnError('origin', 'the origin is not one of the relying party');
  // Ceremonies run on our own pages only, never in a frame of another site.
  if (clientData.crossOrigin || clientData.topOrigin !== undefined) throw new WebAuthnError('origin', 'a cross-origin ceremony is not accepted');
}

function knownTransports(values: readonly string[]): string[] {
  return [...new Set(values.filter((t) => KNOWN_TRANSPORTS.has(t)))];
}

function readRegistration(response: unknown): { json: RegistrationResponseJSON; clientData: ClientData; transports: string[] } {
  try {
    const { id, inner } = readEnvelope(response);
    const clientDataJSON = base64urlField(inner.clientDataJSON, 'clientDataJSON', MAX_CLIENT_DATA);
    const attestationObject = base64urlField(inner.attestationObject, 'attestationObject', MAX_ATTESTATION_OBJECT);
    const rawTransports: unknown = inner.transports;
    let transports: string[] = [];
    if (rawTransports !== undefined && rawTransports !== null) {
      if (!Array.isArray(rawTransports) || rawTransports.length > MAX_TRANSPORTS || !rawTransports.every((t) => typeof t === 'string' && t.length <= 32)) {
        throw malformed(`transports must be at most ${MAX_TRANSPORTS} strings`);
      }
      // unknown transports are ignored, as WebAuthn asks of relying parties
      transports = knownTransports(rawTransports as string[]);
    }
    const clientData = readClientData(clientDataJSON.bytes);

    let decoded: unknown;
    try {
      decoded = decodeAttestationObject(new Uint8Array(attestationObject.bytes));
    } catch (err) {
      throw malformed('attestationObject is not CBOR', err);
    }
    if (!(decoded instanceof Map)) throw malformed('attestationObject must be a CBOR map');
    const fmt: unknown = decoded.get('fmt');
    const authData: unknown = decoded.get('authData');
    if (typeof fmt !== 'string' || !(decoded.get('attStmt') instanceof Map) || !(authData instanceof Uint8Array)) {
      throw malformed('attestationObject must have fmt, attStmt and authData');
    }
    const parsed = readAuthenticatorData(authData);
    if (!parsed.flags.at || !parsed.credentialID || !parsed.credentialPublicKey || !parsed.aaguid) {
      throw malformed('the authenticator data carries no attested credential');
    }

    const json: RegistrationResponseJSON = {
      id,
      rawId: id,
      type: 'public-key',
      response: { clientDataJSON: clientDataJSON.text, attestationObject: attestationObject.text, transports },
      clientExtensionResults: {},
    };
    return { json, clientData, transports };
  } catch (err) {
    throw err instanceof WebAuthnError ? err : malformed('the credential cannot be read', err);
  }
}

function readAuthentication(response: unknown): { json: AuthenticationResponseJSON; clientData: ClientData } {
  try {
    const { id, inner } = readEnvelope(response);
    const clientDataJSON = base64urlField(inner.clientDataJSON, 'clientDataJSON', MAX_CLIENT_DATA);
    const authenticatorData = base64urlField(inner.authenticatorData, 'authenticatorData', MAX_AUTHENTICATOR_DATA);
    const signature = base64urlField(inner.signature, 'signature', MAX_SIGNATURE);
    const rawHandle: unknown = inner.userHandle;
    let userHandle: string | undefined;
    if (rawHandle !== undefined && rawHandle !== null && rawHandle !== '') {
      userHandle = base64urlField(rawHandle, 'userHandle', Math.ceil((MAX_USER_HANDLE_BYTES * 4) / 3)).text;
    }
    const clientData = readClientData(clientDataJSON.bytes);
    readAuthenticatorData(authenticatorData.bytes);

    const json: AuthenticationResponseJSON = {
      id,
      rawId: id,
      type: 'public-key',
      response: { clientDataJSON: clientDataJSON.text, authenticatorData: authenticatorData.text, signature: signature.text, userHandle },
      clientExtensionResults: {},
    };
    return { json, clientData };
  } catch (err) {
    throw err instanceof WebAuthnError ? err : malformed('the credential cannot be read', err);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The library's errors

/**
 * The library throws plain Errors; their messages quote values from the response (a challenge, an origin), so each
 * is recognised by its fixed beginning only, never by a word that could come from the attacker's part.
 */
const LIBRARY_MESSAGES: [RegExp, WebAuthnFailure][] = [
  [/^Unexpected (registration|authentication) response challenge /, 'challenge'],
  [/^Custom challenge verifier returned false/, 'challenge'],
  [/^Unexpected (registration|authentication) response origin /, 'origin'],
  [/^Unexpected cross-origin authentication response top origin /, 'origin'],
  [/^Detected cross-origin authentication response /, 'origin'],
  [/^Unexpected top origin /, 'origin'],
  [/^Unexpected RP ID hash$/, 'rp'],
  [/^User verification (was )?required, but user could not be verified$/, 'user_verification'],
  // user presence (UP) is the lesser gesture that user verification implies
  [/^User presence was required, but user was not present$/, 'user_verification'],
  [/^User not present during authentication$/, 'user_verification'],
  [/^Response counter value /, 'counter'],
  [/^(Missing credential ID|Credential ID was not base64url-encoded|Unexpected credential type )/, 'malformed'],
  [/^Unexpected (registration|authentication) response type/, 'malformed'],
  [/^(Credential missing response|Credential response \w+ was not a)/, 'malformed'],
  [/^(Unexpected value for TokenBinding|Unexpected tokenBinding|ClientDataJSON tokenBinding)/, 'malformed'],
  [/^No (credential ID was provided|public key was provided|AAGUID was present)/, 'malformed'],
  [/^(Credential public key was missing numeric alg|Unexpected public key alg )/, 'malformed'],
  [/^(None attestation had unexpected attestation statement|Unsupported Attestation Format)/, 'malformed'],
  [/^(Authenticator data was \d+ bytes|Leftover bytes detected)/, 'malformed'],
];

function classify(err: unknown, otherwise: WebAuthnFailure): WebAuthnError {
  if (err instanceof WebAuthnError) return err;
  const name = err instanceof Error ? err.name : '';
  const message = err instanceof Error ? err.message : String(err);
  let reason: WebAuthnFailure = otherwise;
  if (name === 'UnexpectedRPIDHash') reason = 'rp';
  else if (name === 'InvalidBackupFlags') reason = 'malformed';
  else if (name === 'SimpleWebAuthnError') reason = 'malformed'; // PQCNotSupportedError: an algorithm this runtime lacks
  else reason = LIBRARY_MESSAGES.find(([pattern]) => pattern.test(message))?.[1] ?? otherwise;
  return new WebAuthnError(reason, `the passkey response was refused (${reason})`, { cause: err });
}
