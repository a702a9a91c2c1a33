/** The sealed state of a validated SAML response waiting for its browser (apps/gateway/src/sso/binding.ts). */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { bindingOf, openState, sealState, stateKey, STATE_TTL_MS, type PendingLogin } from '../src/sso/binding';

const pem = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const key = stateKey(pem());
const now = Date.now();
const state: PendingLogin = {
  connectionId: 'sso_a',
  assertionId: '_a1',
  assertionExpiresAt: new Date(now + 60_000).toISOString(),
  nameId: 'ada@acme.example.com',
  nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  sessionIndex: '_s1',
  email: 'ada@acme.example.com',
  name: 'Ada',
  returnTo: 'client_id=x',
  relayState: 'r',
  binding: bindingOf('n'.repeat(43)),
  expires: now + STATE_TTL_MS,
};

describe('pending-login state', () => {
  it('opens what it sealed, for the same connection, until it expires', () => {
    const token = sealState(key, state);
    expect(openState([key], token, 'sso_a', now)).toEqual(state);
    expect(openState([key], token, 'sso_a', now + STATE_TTL_MS + 1)).toBe('expired_state');
  });

  it('hides the email and name (encrypted, not only signed)', () => {
    const raw = Buffer.from(sealState(key, state), 'base64url').toString('latin1');
    expect(raw).not.toContain('ada@');
    expect(raw).not.toContain('client_id');
  });

  it('refuses another connection, another SP key, any changed byte and garbage', () => {
    const token = sealState(key, state);
    expect(openState([key], token, 'sso_b', now)).toBe('invalid_state');
    expect(openState([stateKey(pem())], token, 'sso_a', now)).toBe('invalid_state');
    // During an SP key rollover both keys open states (one sealed just before the switch, say).
    expect(openState([stateKey(pem()), key], token, 'sso_a', now)).toEqual(state);
    const bytes = Buffer.from(token, 'base64url');
    for (const i of [0, 12, 28, bytes.length - 1]) {
      const bent = Buffer.from(bytes);
      bent[i] = bent[i]! ^ 1;
      expect(openState([key], bent.toString('base64url'), 'sso_a', now)).toBe('invalid_state');
    }
    for (const junk of ['', 'x', '%%%', 'A'.repeat(9000), 'A'.repeat(60)]) expect(openState([key], junk, 'sso_a', now)).toBe('invalid_state');
  });

  it('binds with the SHA-256 of the nonce, never the nonce itself', () => {
    const nonce = 'n'.repeat(43);
    expect(bindingOf(nonce)).toBe(createHash('sha256').update(nonce).digest('base64url'));
    expect(bindingOf(nonce)).not.toBe(nonce);
    expect(bindingOf(nonce)).not.toBe(bindingOf('m'.repeat(43)));
  });
});
