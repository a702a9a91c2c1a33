import { newId } from '@secsvc/shared';
import { SoftAuthenticator, encodeCbor, type Knobs } from './testing/soft-authenticator';
import {
  authenticationOptions,
  credentialIdOf,
  registrationOptions,
  userHandleOf,
  userHandleOfResponse,
  userIdOfHandle,
  verifyAuthentication,
  verifyRegistration,
  WebAuthnError,
  type RelyingParty,
  type VerifiedCredential,
  type WebAuthnFailure,
} from './webauthn';

const rp: RelyingParty = { id: 'login.example.com', name: 'Example', origins: ['https://login.example.com', 'https://admin.login.example.com'] };
const user = { id: newId('user'), name: 'ada@example.com', displayName: 'Ada Lovelace' };
const newAuthenticator = (opts: Partial<ConstructorParameters<typeof SoftAuthenticator>[0]> = {}) =>
  new SoftAuthenticator({ rpId: rp.id, origin: rp.origins[0], ...opts });

/** The reason a promise was refused with, failing the test when it was not a WebAuthnError. */
async function reasonOf(promise: Promise<unknown>): Promise<WebAuthnFailure> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof WebAuthnError) return err.reason;
    throw new Error(`expected a WebAuthnError, got ${String(err)}`);
  }
  throw new Error('expected a refusal, got success');
}

async function register(authenticator: SoftAuthenticator, knobs: Knobs = {}): Promise<VerifiedCredential> {
  const { options, challenge } = await registrationOptions(rp, user, []);
  return verifyRegistration(rp, authenticator.create(options, knobs), challenge);
}

const stored = (c: VerifiedCredential, counter = c.counter) => ({ id: c.credentialId, publicKey: c.publicKey, counter, transports: c.transports });

/** A deep copy of a JSON value with `path` set to `value` (or removed when value is undefined). */
function withPath<T>(json: T, path: string[], value: unknown): unknown {
  const copy = structuredClone(json) as Record<string, unknown>;
  let node = copy;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  if (value === undefined) delete node[path[path.length - 1]];
  else node[path[path.length - 1]] = value;
  return copy;
}

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('user handles', () => {
  it('are the base64url UTF-8 bytes of the user id and map back to it', () => {
    const handle = userHandleOf(user.id);
    expect(handle).toBe(Buffer.from(user.id).toString('base64url'));
    expect(userIdOfHandle(handle)).toBe(user.id);
    // Only user ids come back: a handle naming anything else (a NUL, another kind of id) names nobody.
    expect(userIdOfHandle(userHandleOf('usér_ü'))).toBeUndefined();
    expect(userIdOfHandle(Buffer.from('\u0000').toString('base64url'))).toBeUndefined();
    expect(userIdOfHandle(userHandleOf(newId('key')))).toBeUndefined();
  });

  it('refuse ids over 64 bytes and read nothing from junk', () => {
    expect(() => userHandleOf('x'.repeat(65))).toThrow(RangeError);
    expect(() => userHandleOf('')).toThrow(RangeError);
    for (const junk of ['', 'not base64!', 'QQ==', 'QR', 'A'.repeat(100), Buffer.from([0xff, 0xfe]).toString('base64url')]) {
      expect(userIdOfHandle(junk)).toBeUndefined();
    }
  });
});

describe('options', () => {
  it('ask for a discoverable credential with user verification, no attestation, ES256/EdDSA/RS256, excluding the given', async () => {
    const { options, challenge } = await registrationOptions(rp, user, [{ id: 'AAEC', transports: ['usb', 'bogus'] }]);
    expect(challenge).toBe(options.challenge);
    expect(Buffer.from(challenge, 'base64url').length).toBeGreaterThanOrEqual(16);
    expect(options.rp).toEqual({ id: rp.id, name: rp.name });
    expect(options.user).toEqual({ id: userHandleOf(user.id), name: user.name, displayName: user.displayName });
    expect(options.authenticatorSelection).toMatchObject({ residentKey: 'required', requireResidentKey: true, userVerification: 'required' });
    expect(options.attestation).toBe('none');
    expect(options.pubKeyCredParams).toEqual([-7, -8, -257].map((alg) => ({ alg, type: 'public-key' })));
    expect(options.excludeCredentials).toEqual([{ id: 'AAEC', transports: ['usb'], type: 'public-key' }]);
    expect(options.timeout).toBe(300_000);
  });

  it('ask for user verification at login; no allow list for a discoverable login; a new challenge each time', async () => {
    const discoverable = await authenticationOptions(rp, []);
    expect(discoverable.options).toMatchObject({ rpId: rp.id, userVerification: 'required' });
    expect(discoverable.options.allowCredentials).toBeUndefined();
    const scoped = await authenticationOptions(rp, [{ id: 'AAEC', transports: ['internal'] }]);
    expect(scoped.options.allowCredentials).toEqual([{ id: 'AAEC', transports: ['internal'], type: 'public-key' }]);
    expect(scoped.challenge).not.toBe(discoverable.challenge);
  });
});

describe('registration then login', () => {
  it('round-trips: the stored credential verifies the assertion and the counter moves on', async () => {
    const authenticator = newAuthenticator();
    const credential = await register(authenticator);
    expect(credential).toMatchObject({
      credentialId: authenticator.credentials[0].id.toString('base64url'),
      counter: 0,
      transports: ['internal', 'hybrid'],
      aaguid: '00000000-0000-0000-0000-000000000000',
      backedUp: false,
      deviceType: 'singleDevice',
      userVerified: true,
    });
    expect(credential.publicKey.equals(authenticator.credentials[0].cosePublicKey)).toBe(true);

    const { options, challenge } = await authenticationOptions(rp, [{ id: credential.credentialId, transports: credential.transports }]);
    const response = authenticator.get(options);
    expect(credentialIdOf(response)).toBe(credential.credentialId);
    expect(await verifyAuthentication(rp, response, challenge, stored(credential))).toEqual({ newCounter: 1, userVerified: true });

    const second = await authenticationOptions(rp, []);
    expect(await verifyAuthentication(rp, authenticator.get(second.options), second.challenge, stored(credential, 1))).toEqual({ newCounter: 2, userVerified: true });
  });

  it('accepts any of the relying party origins and a synced passkey that always reports counter 0', async () => {
    const authenticator = newAuthenticator({ origin: rp.origins[1], counterMode: 'zero', backedUp: true });
    const credential = await register(authenticator);
    expect(credential).toMatchObject({ backedUp: true, deviceType: 'multiDevice', counter: 0 });
    for (let i = 0; i < 2; i++) {
      const { options, challenge } = await authenticationOptions(rp, []);
      expect(await verifyAuthentication(rp, authenticator.get(options), challenge, stored(credential, 0))).toEqual({ newCounter: 0, userVerified: true });
    }
  });

  it('discoverable login: the user handle maps back to the user id', async () => {
    const authenticator = newAuthenticator();
    const credential = await register(authenticator);
    const { options, challenge } = await authenticationOptions(rp, []);
    const response = authenticator.get(options);
    const handle = userHandleOfResponse(response);
    expect(handle).toBe(userHandleOf(user.id));
    expect(userIdOfHandle(handle!)).toBe(user.id);
    await expect(verifyAuthentication(rp, response, challenge, stored(credential))).resolves.toMatchObject({ userVerified: true });
  });

  it('reads each field of the response once: the library verifies what was checked', async () => {
    const authenticator = newAuthenticator();
    const credential = await register(authenticator);
    const { options, challenge } = await authenticationOptions(rp, []);
    const valid = authenticator.get(options);
    let reads = 0;
    const inner = {
      ...valid.response,
      get signature() {
        return reads++ === 0 ? valid.response.signature : 'AA';
      },
    };
    await expect(verifyAuthentication(rp, { ...valid, response: inner }, challenge, stored(credential))).resolves.toMatchObject({ newCounter: 1 });
    expect(reads).toBe(1);
  });

  it('the software authenticator honours excludeCredentials', async () => {
    const authenticator = newAuthenticator();
    const credential = await register(authenticator);
    const { options } = await registrationOptions(rp, user, [{ id: credential.credentialId, transports: credential.transports }]);
    expect(() => authenticator.create(options)).toThrow(/InvalidStateError/);
  });
});

describe('registration refusals', () => {
  it.each<[string, Knobs, WebAuthnFailure]>([
    ['a wrong challenge', { challenge: Buffer.alloc(32, 7).toString('base64url') }, 'challenge'],
    ['a wrong origin', { origin: 'https://login.example.com.evil.test' }, 'origin'],
    ['a wrong RP ID', { rpId: 'evil.test' }, 'rp'],
    ['no user verification', { userVerified: false }, 'user_verification'],
    ['no user presence', { userPresent: false, userVerified: false }, 'user_verification'],
  ])('%s', async (_name, knobs, reason) => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    expect(await reasonOf(verifyRegistration(rp, newAuthenticator().create(options, knobs), challenge))).toBe(reason);
  });

  it('an empty expected challenge (none was issued)', async () => {
    const { options } = await registrationOptions(rp, user, []);
    expect(await reasonOf(verifyRegistration(rp, newAuthenticator().create(options, { challenge: '' }), ''))).toBe('challenge');
  });

  it('a cross-origin (framed) ceremony', async () => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    const response = newAuthenticator().create(options);
    const clientData = { type: 'webauthn.create', challenge, origin: rp.origins[0], crossOrigin: true, topOrigin: 'https://evil.test' };
    expect(await reasonOf(verifyRegistration(rp, withPath(response, ['response', 'clientDataJSON'], b64(clientData)), challenge))).toBe('origin');
  });

  it('an id that is not the credential id of the authenticator data', async () => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    const response = newAuthenticator().create(options);
    const other = Buffer.alloc(32, 1).toString('base64url');
    expect(await reasonOf(verifyRegistration(rp, { ...response, id: other, rawId: other }, challenge))).toBe('malformed');
  });

  it('an attestation object that is not "none" with an empty statement, or has no credential', async () => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    const response = newAuthenticator().create(options);
    const authData = Buffer.from(response.response.authenticatorData!, 'base64url');
    const attestation = (entries: [string, unknown][]) =>
      withPath(response, ['response', 'attestationObject'], encodeCbor(new Map(entries as never)).toString('base64url'));
    const cases = [
      attestation([['fmt', 'none'], ['attStmt', new Map([['sig', Buffer.alloc(8)]])], ['authData', authData]]),
      attestation([['fmt', 'made-up'], ['attStmt', new Map()], ['authData', authData]]),
      attestation([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData.subarray(0, 37)]]),
      attestation([['fmt', 'none'], ['attStmt', new Map()], ['authData', Buffer.concat([authData, Buffer.from([0])])]]),
      attestation([['fmt', 'none'], ['attStmt', new Map()]]),
      attestation([['fmt', 7], ['attStmt', new Map()], ['authData', authData]]),
      withPath(response, ['response', 'attestationObject'], encodeCbor([1, 2, 3]).toString('base64url')),
      withPath(response, ['response', 'attestationObject'], Buffer.from([0xbf, 0xff, 0x00]).toString('base64url')),
    ];
    for (const junk of cases) expect(await reasonOf(verifyRegistration(rp, junk, challenge))).toBe('malformed');
  });

  it('a public key of an algorithm not offered', async () => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    const response = newAuthenticator().create(options);
    const authData = Buffer.from(response.response.authenticatorData!, 'base64url');
    const keyAt = 37 + 16 + 2 + 32;
    const cose = new Map<never, never>([
      [1, 2], [3, -36], [-1, 1], [-2, Buffer.alloc(32, 1)], [-3, Buffer.alloc(32, 2)],
    ] as never);
    const badAuthData = Buffer.concat([authData.subarray(0, keyAt), encodeCbor(cose)]);
    const junk = withPath(
      response,
      ['response', 'attestationObject'],
      encodeCbor(new Map([['fmt', 'none'], ['attStmt', new Map()], ['authData', badAuthData]] as never)).toString('base64url'),
    );
    expect(await reasonOf(verifyRegistration(rp, junk, challenge))).toBe('malformed');
  });

  it('ignores transports it does not know and refuses transports that are not strings', async () => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    const response = newAuthenticator().create(options);
    const verified = await verifyRegistration(rp, withPath(response, ['response', 'transports'], ['usb', 'carrier-pigeon', 'usb']), challenge);
    expect(verified.transports).toEqual(['usb']);
    expect(await reasonOf(verifyRegistration(rp, withPath(response, ['response', 'transports'], [1]), challenge))).toBe('malformed');
    expect(await reasonOf(verifyRegistration(rp, withPath(response, ['response', 'transports'], 'usb'), challenge))).toBe('malformed');
  });
});

describe('authentication refusals', () => {
  let authenticator: SoftAuthenticator;
  let credential: VerifiedCredential;
  beforeEach(async () => {
    authenticator = newAuthenticator();
    credential = await register(authenticator);
  });

  it.each<[string, Knobs, WebAuthnFailure]>([
    ['a wrong challenge', { challenge: Buffer.alloc(32, 7).toString('base64url') }, 'challenge'],
    ['a wrong origin', { origin: 'https://evil.test' }, 'origin'],
    ['a wrong RP ID', { rpId: 'example.com' }, 'rp'],
    ['no user verification', { userVerified: false }, 'user_verification'],
    ['no user presence', { userPresent: false }, 'user_verification'],
    ['a tampered signature', { tamperSignature: true }, 'signature'],
  ])('%s', async (_name, knobs, reason) => {
    const { options, challenge } = await authenticationOptions(rp, []);
    expect(await reasonOf(verifyAuthentication(rp, authenticator.get(options, knobs), challenge, stored(credential)))).toBe(reason);
  });

  it('a signature over other data, or that is not a DER ECDSA signature at all', async () => {
    const { options, challenge } = await authenticationOptions(rp, []);
    const response = authenticator.get(options);
    const authData = Buffer.from(response.response.authenticatorData, 'base64url');
    authData[36] ^= 0x01; // the counter's low byte, after signing
    const cases = [
      withPath(response, ['response', 'authenticatorData'], authData.toString('base64url')),
      withPath(response, ['response', 'signature'], Buffer.alloc(64, 9).toString('base64url')),
      withPath(response, ['response', 'signature'], Buffer.from([0x30, 0x02, 0x02, 0x00]).toString('base64url')),
      withPath(response, ['response', 'signature'], 'AA'),
    ];
    for (const junk of cases) expect(await reasonOf(verifyAuthentication(rp, junk, challenge, stored(credential)))).toBe('signature');
  });

  it('a counter that does not increase (a cloned authenticator), but only once the signature is genuine', async () => {
    const first = await authenticationOptions(rp, []);
    const { newCounter } = await verifyAuthentication(rp, authenticator.get(first.options, { counter: 5 }), first.challenge, stored(credential));
    expect(newCounter).toBe(5);

    for (const counter of [5, 4, 0]) {
      const { options, challenge } = await authenticationOptions(rp, []);
      expect(await reasonOf(verifyAuthentication(rp, authenticator.get(options, { counter }), challenge, stored(credential, 5)))).toBe('counter');
    }
    // a forged assertion with a stale counter is a bad signature, not evidence of a clone
    const { options, challenge } = await authenticationOptions(rp, []);
    expect(await reasonOf(verifyAuthentication(rp, authenticator.get(options, { counter: 1, tamperSignature: true }), challenge, stored(credential, 5)))).toBe('signature');
    // a stored 0 and a new 0 is a counter-less authenticator, not a clone
    const zero = await authenticationOptions(rp, []);
    await expect(verifyAuthentication(rp, authenticator.get(zero.options, { counter: 0 }), zero.challenge, stored(credential, 0))).resolves.toEqual({ newCounter: 0, userVerified: true });
  });

  it('an assertion of another credential than the one given, or of another key', async () => {
    const other = newAuthenticator();
    const otherCredential = await register(other);
    const { options, challenge } = await authenticationOptions(rp, []);
    expect(await reasonOf(verifyAuthentication(rp, other.get(options), challenge, stored(credential)))).toBe('malformed');
    // the same id with another public key
    const mixed = { ...stored(credential), publicKey: otherCredential.publicKey };
    expect(await reasonOf(verifyAuthentication(rp, authenticator.get(options), challenge, mixed))).toBe('signature');
  });

  it('a registration response, or a cross-origin one', async () => {
    const { options, challenge } = await authenticationOptions(rp, []);
    const response = authenticator.get(options);
    const create = { type: 'webauthn.create', challenge, origin: rp.origins[0] };
    expect(await reasonOf(verifyAuthentication(rp, withPath(response, ['response', 'clientDataJSON'], b64(create)), challenge, stored(credential)))).toBe('malformed');
    const framed = { type: 'webauthn.get', challenge, origin: rp.origins[0], crossOrigin: true };
    expect(await reasonOf(verifyAuthentication(rp, withPath(response, ['response', 'clientDataJSON'], b64(framed)), challenge, stored(credential)))).toBe('origin');
    const top = { type: 'webauthn.get', challenge, origin: rp.origins[0], topOrigin: 'https://evil.test' };
    expect(await reasonOf(verifyAuthentication(rp, withPath(response, ['response', 'clientDataJSON'], b64(top)), challenge, stored(credential)))).toBe('origin');
  });
});

describe('malformed responses', () => {
  const huge = 'A'.repeat(5_000_000);
  const junkValues: unknown[] = [null, undefined, {}, [], 'string', '{"id":"x"}', 42, true, huge, Symbol('s'), () => 1, new Map()];

  /** Variations of a valid response: every field missing, of a wrong type, not base64url, or huge. */
  function mutations(valid: object, fields: string[][]): unknown[] {
    const out: unknown[] = [...junkValues];
    for (const path of fields) {
      for (const value of [undefined, null, 1, true, {}, [], '', 'not base64url!', 'QQ==', 'QR', huge, ['AA']]) out.push(withPath(valid, path, value));
    }
    out.push(withPath(valid, ['response', 'clientDataJSON'], b64('not json')));
    out.push(withPath(valid, ['response', 'clientDataJSON'], b64([1, 2])));
    out.push(withPath(valid, ['response', 'clientDataJSON'], b64({ type: 'webauthn.get', challenge: 1, origin: rp.origins[0] })));
    out.push(withPath(valid, ['response', 'clientDataJSON'], Buffer.from([0xff, 0xfe, 0x7b]).toString('base64url')));
    out.push(withPath(valid, ['rawId'], Buffer.alloc(32).toString('base64url')));
    out.push(withPath(valid, ['type'], 'password'));
    // a getter that throws, and one that answers differently each time it is read
    out.push({ ...valid, get id(): string { throw new Error('boom'); } });
    return out;
  }

  it('at registration: all refused as malformed, none crashes', async () => {
    const { options, challenge } = await registrationOptions(rp, user, []);
    const valid = newAuthenticator().create(options);
    const cases = mutations(valid, [['id'], ['rawId'], ['response'], ['response', 'clientDataJSON'], ['response', 'attestationObject']]);
    cases.push(withPath(valid, ['response', 'attestationObject'], b64('garbage that is not CBOR')));
    cases.push(withPath(valid, ['id'], 'A'.repeat(2000)));
    for (const junk of cases) expect([junk, await reasonOf(verifyRegistration(rp, junk, challenge))]).toEqual([junk, 'malformed']);
  });

  it('at login: all refused as malformed, none crashes; the readers answer undefined', async () => {
    const authenticator = newAuthenticator();
    const credential = await register(authenticator);
    const { options, challenge } = await authenticationOptions(rp, []);
    const valid = authenticator.get(options);
    const cases = mutations(valid, [['id'], ['rawId'], ['response'], ['response', 'clientDataJSON'], ['response', 'authenticatorData'], ['response', 'signature']]);
    cases.push(withPath(valid, ['response', 'userHandle'], 7));
    cases.push(withPath(valid, ['response', 'userHandle'], 'A'.repeat(200)));
    cases.push(withPath(valid, ['response', 'authenticatorData'], Buffer.alloc(36).toString('base64url')));
    cases.push(withPath(valid, ['response', 'authenticatorData'], Buffer.concat([Buffer.from(valid.response.authenticatorData, 'base64url'), Buffer.from([1, 2])]).toString('base64url')));
    // backed up (BS) without backup eligibility (BE)
    const flags = Buffer.from(valid.response.authenticatorData, 'base64url');
    flags[32] |= 0x10;
    cases.push(withPath(valid, ['response', 'authenticatorData'], flags.toString('base64url')));
    for (const junk of cases) expect([junk, await reasonOf(verifyAuthentication(rp, junk, challenge, stored(credential)))]).toEqual([junk, 'malformed']);

    for (const junk of junkValues) {
      expect(credentialIdOf(junk)).toBeUndefined();
      expect(userHandleOfResponse(junk)).toBeUndefined();
    }
    expect(credentialIdOf({ id: 'not base64url!' })).toBeUndefined();
    expect(credentialIdOf({ id: 'A'.repeat(2000) })).toBeUndefined();
    expect(credentialIdOf({ get id(): string { throw new Error('boom'); } })).toBeUndefined();
    expect(userHandleOfResponse({ response: { userHandle: 5 } })).toBeUndefined();
    expect(userHandleOfResponse({ response: { userHandle: 'A'.repeat(200) } })).toBeUndefined();
  });

  it('random corruption of a valid response is refused with a reason, never a crash', async () => {
    const authenticator = newAuthenticator();
    const credential = await register(authenticator);
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 60; i++) {
      const { options, challenge } = await authenticationOptions(rp, []);
      const valid = authenticator.get(options, { counter: 1000 + i });
      const field = (['clientDataJSON', 'authenticatorData', 'signature'] as const)[random(3)];
      const bytes = Buffer.from(valid.response[field], 'base64url');
      bytes[random(bytes.length)] ^= 1 << random(8);
      const reason = await reasonOf(verifyAuthentication(rp, withPath(valid, ['response', field], bytes.toString('base64url')), challenge, stored(credential)));
      expect(['malformed', 'challenge', 'origin', 'rp', 'user_verification', 'signature']).toContain(reason);
    }
  });
});
