import { base32Decode, base32Encode, generateTotpSecret, hotp, otpauthUri, qrSvgDataUri, timeStep, TOTP_DIGITS, TOTP_PERIOD, verifyTotp } from './totp';

// RFC 4226 Appendix D and RFC 6238 Appendix B seeds: the ASCII digits "1234567890" repeated to the HMAC's size.
const SEED_SHA1 = Buffer.from('12345678901234567890', 'ascii');
const SEED_SHA256 = Buffer.from('12345678901234567890123456789012', 'ascii');
const SEED_SHA512 = Buffer.from('1234567890123456789012345678901234567890123456789012345678901234', 'ascii');

describe('hotp', () => {
  it('gives the RFC 4226 Appendix D values for counters 0 to 9', () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    expect(expected.map((_, counter) => hotp(SEED_SHA1, counter))).toEqual(expected);
    expect(hotp(SEED_SHA1, 9n)).toBe('520489');
  });

  it('refuses counters outside an unsigned 64-bit integer and digits outside 1..10', () => {
    expect(() => hotp(SEED_SHA1, -1)).toThrow(RangeError);
    expect(() => hotp(SEED_SHA1, 1.5)).toThrow(RangeError);
    expect(() => hotp(SEED_SHA1, 2n ** 64n)).toThrow(RangeError);
    expect(() => hotp(SEED_SHA1, 0, 0)).toThrow(RangeError);
    expect(hotp(SEED_SHA1, 2n ** 64n - 1n)).toMatch(/^\d{6}$/);
  });
});

describe('totp (RFC 6238 Appendix B)', () => {
  // time (s), then the 8-digit codes for SHA1, SHA256, SHA512
  const vectors: [number, string, string, string][] = [
    [59, '94287082', '46119246', '90693936'],
    [1111111109, '07081804', '68084774', '25091201'],
    [1111111111, '14050471', '67062674', '99943326'],
    [1234567890, '89005924', '91819424', '93441116'],
    [2000000000, '69279037', '90698825', '38618901'],
    [20000000000, '65353130', '77737706', '47863826'],
  ];

  it.each(vectors)('at %i s gives SHA1 %s, SHA256 %s, SHA512 %s', (seconds, sha1, sha256, sha512) => {
    const step = timeStep(seconds * 1000);
    expect(hotp(SEED_SHA1, step, 8, 'sha1')).toBe(sha1);
    expect(hotp(SEED_SHA256, step, 8, 'sha256')).toBe(sha256);
    expect(hotp(SEED_SHA512, step, 8, 'sha512')).toBe(sha512);
  });

  it('counts 30-second steps from the Unix epoch, with 6-digit codes by default', () => {
    expect([TOTP_PERIOD, TOTP_DIGITS]).toEqual([30, 6]);
    expect(timeStep(0)).toBe(0);
    expect(timeStep(29_999)).toBe(0);
    expect(timeStep(30_000)).toBe(1);
    expect(timeStep(1111111109 * 1000)).toBe(0x23523ec);
    expect(timeStep(60_000, 60)).toBe(1);
  });
});

describe('base32', () => {
  const rfc4648: [string, string][] = [
    ['', ''],
    ['f', 'MY======'],
    ['fo', 'MZXQ===='],
    ['foo', 'MZXW6==='],
    ['foob', 'MZXW6YQ='],
    ['fooba', 'MZXW6YTB'],
    ['foobar', 'MZXW6YTBOI======'],
  ];

  it.each(rfc4648)('encodes %j as %s (without padding) and decodes it back', (plain, encoded) => {
    expect(base32Encode(Buffer.from(plain))).toBe(encoded.replace(/=/g, ''));
    expect(base32Decode(encoded).toString()).toBe(plain);
    expect(base32Decode(encoded.replace(/=/g, '')).toString()).toBe(plain);
  });

  it('round-trips random buffers of every length up to 40 bytes', () => {
    for (let n = 0; n <= 40; n++) {
      const buf = Buffer.from(Array.from({ length: n }, (_, i) => (i * 97 + n * 31) & 0xff));
      const text = base32Encode(buf);
      expect(text).toMatch(/^[A-Z2-7]*$/);
      expect(base32Decode(text).equals(buf)).toBe(true);
    }
    const secret = generateTotpSecret();
    expect(base32Decode(base32Encode(secret)).equals(secret)).toBe(true);
  });

  it('decodes any case, ignores spaces and =, and throws on other characters', () => {
    expect(base32Decode('mzxw 6ytb oi==').toString()).toBe('foobar');
    expect(base32Decode('MzXw6YtBoI').toString()).toBe('foobar');
    for (const bad of ['MZXW1', 'MZXW0', 'MZXW8', 'MZ-XW', 'MZ\tXW', 'MZXW6Ä', 'ﬅ', '😀']) expect(() => base32Decode(bad)).toThrow(/invalid character/);
  });

  it('gives 20-byte secrets, a different one each time (32 base32 characters)', () => {
    const a = generateTotpSecret();
    const b = generateTotpSecret();
    expect(a).toHaveLength(20);
    expect(a.equals(b)).toBe(false);
    expect(base32Encode(a)).toHaveLength(32);
  });
});

describe('verifyTotp', () => {
  const secret = SEED_SHA1;
  const nowMs = 1_700_000_012_345;
  const now = timeStep(nowMs);
  const codeAt = (step: number) => hotp(secret, step);

  it('accepts the codes of the current step and one step either side, returning that step', () => {
    for (const step of [now - 1, now, now + 1]) expect(verifyTotp(secret, codeAt(step), { nowMs })).toBe(step);
  });

  it('refuses codes two steps away, unless the window is widened', () => {
    expect(verifyTotp(secret, codeAt(now - 2), { nowMs })).toBeUndefined();
    expect(verifyTotp(secret, codeAt(now + 2), { nowMs })).toBeUndefined();
    expect(verifyTotp(secret, codeAt(now + 2), { nowMs, window: 2 })).toBe(now + 2);
    expect(verifyTotp(secret, codeAt(now - 1), { nowMs, window: 0 })).toBeUndefined();
    expect(verifyTotp(secret, codeAt(now), { nowMs, window: 0 })).toBe(now);
  });

  it('accepts a code once: not again, and no code of an earlier or equal step after it (replay)', () => {
    const step = verifyTotp(secret, codeAt(now), { nowMs, lastStep: null })!;
    expect(step).toBe(now);
    expect(verifyTotp(secret, codeAt(now), { nowMs, lastStep: step })).toBeUndefined();
    expect(verifyTotp(secret, codeAt(now - 1), { nowMs, lastStep: step })).toBeUndefined();
    expect(verifyTotp(secret, codeAt(now + 1), { nowMs, lastStep: step })).toBe(now + 1);
    expect(verifyTotp(secret, codeAt(now), { nowMs, lastStep: now - 1 })).toBe(now);
    // an authenticator whose later code was used first: its earlier code is refused though still in the window
    expect(verifyTotp(secret, codeAt(now - 1), { nowMs, lastStep: now + 1 })).toBeUndefined();
  });

  it('ignores spaces in the code', () => {
    const code = codeAt(now);
    expect(verifyTotp(secret, ` ${code.slice(0, 3)} ${code.slice(3)} `, { nowMs })).toBe(now);
  });

  it('returns undefined for garbage, without throwing', () => {
    const code = codeAt(now);
    const garbage = ['', '      ', 'abcdef', code.slice(0, 5), `${code}0`, code.replace(/^./, 'x'), `${code}\n`, `\t${code}`, '１２３４５６', '-12345', '+12345', '1e5000', hotp(secret, now, 8)];
    for (const g of garbage) expect(verifyTotp(secret, g, { nowMs })).toBeUndefined();
    expect(verifyTotp(secret, null as unknown as string, { nowMs })).toBeUndefined();
    expect(verifyTotp(secret, code, { nowMs: Number.NaN })).toBeUndefined();
    expect(verifyTotp(secret, code, { nowMs: Number.POSITIVE_INFINITY })).toBeUndefined();
    expect(verifyTotp(secret, code, { nowMs, window: Number.NaN })).toBe(now);
  });

  it('refuses the code of another secret', () => {
    expect(verifyTotp(SEED_SHA256, codeAt(now), { nowMs })).toBeUndefined();
  });
});

describe('otpauthUri', () => {
  it('has the Key URI shape, with the label and parameters percent-encoded', () => {
    const secret = generateTotpSecret();
    const uri = otpauthUri({ issuer: 'Acme Co', account: 'alice+mfa@example.com', secret });
    expect(uri).toMatch(/^otpauth:\/\/totp\/Acme%20Co:alice%2Bmfa%40example\.com\?secret=[A-Z2-7]{32}&issuer=Acme%20Co&algorithm=SHA1&digits=6&period=30$/);

    const url = new URL(uri);
    expect(url.protocol).toBe('otpauth:');
    expect(url.host).toBe('totp');
    expect(decodeURIComponent(url.pathname.slice(1))).toBe('Acme Co:alice+mfa@example.com');
    expect(Object.fromEntries(url.searchParams)).toEqual({ secret: base32Encode(secret), issuer: 'Acme Co', algorithm: 'SHA1', digits: '6', period: '30' });
    expect(base32Decode(url.searchParams.get('secret')!).equals(secret)).toBe(true);
  });

  it('encodes colons, ampersands and non-ASCII inside the parts so the label and query stay unambiguous', () => {
    const uri = otpauthUri({ issuer: 'A:B & Co', account: 'jörg:x?y#z', secret: SEED_SHA1 });
    const url = new URL(uri);
    const [issuer, account, ...rest] = url.pathname.slice(1).split(':');
    expect(rest).toEqual([]);
    expect([decodeURIComponent(issuer), decodeURIComponent(account)]).toEqual(['A:B & Co', 'jörg:x?y#z']);
    expect(url.hash).toBe('');
    expect(url.searchParams.get('issuer')).toBe('A:B & Co');
    expect(url.searchParams.get('secret')).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  });
});

describe('qrSvgDataUri', () => {
  it('is a base64 SVG data URI of a QR code', async () => {
    const uri = await qrSvgDataUri(otpauthUri({ issuer: 'Acme', account: 'alice@example.com', secret: SEED_SHA1 }));
    const match = /^data:image\/svg\+xml;base64,([A-Za-z0-9+/]+=*)$/.exec(uri);
    expect(match).not.toBeNull();
    const svg = Buffer.from(match![1], 'base64').toString('utf8');
    expect(svg).toMatch(/^\s*<svg[\s>]/);
    expect(svg).toContain('</svg>');
  });
});
