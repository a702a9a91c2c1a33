import { INPUT_LIMITS, inputFaults, isValidUtf8, textFault } from './input';

const nest = (levels: number, leaf: unknown = 1): unknown => {
  let v: unknown = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};

describe('textFault', () => {
  it('accepts ordinary text, emoji (surrogate pairs) and other control characters', () => {
    for (const s of ['', 'Ada Lovelace', '日本語', '👩‍💻 ok', 'tab\there', '\u0001\u001f', '\uFFFD']) expect(textFault(s)).toBeUndefined();
  });
  it('refuses NUL anywhere', () => {
    for (const s of ['\u0000', 'a\u0000', '\u0000b', 'a\u0000b']) expect(textFault(s)).toMatch(/NUL/);
  });
  it('refuses lone high and low surrogates, and a pair in the wrong order', () => {
    for (const s of ['\uD800', 'a\uD83Dz', '\uDC00', 'x\uDFFF', '\uDC00\uD800']) expect(textFault(s)).toMatch(/lone surrogate/);
  });
});

describe('inputFaults', () => {
  it('finds nothing in a clean document', () => {
    expect(inputFaults({ email: 'a@example.com', roles: ['role_a'], metadata: { n: 1, ok: true, x: null, deep: nest(5) } })).toEqual([]);
  });

  it('names every faulty field by its full path, in document order', () => {
    const body = { name: 'x\u0000', context: { ip: '\uD800' }, list: ['ok', 'b\u0000', { inner: ['\u0000'] }], fine: 'yes' };
    expect(inputFaults(body)).toEqual([
      { field: 'name', message: expect.stringMatching(/NUL/) },
      { field: 'context.ip', message: expect.stringMatching(/lone surrogate/) },
      { field: 'list[1]', message: expect.stringMatching(/NUL/) },
      { field: 'list[2].inner[0]', message: expect.stringMatching(/NUL/) },
    ]);
  });

  it('names a faulty key with the bad character shown escaped', () => {
    expect(inputFaults({ metadata: { 'k\u0000y': 1 } })).toEqual([{ field: 'metadata.k\\u0000y', message: expect.stringMatching(/^key must not contain the NUL/) }]);
    expect(inputFaults({ ['\uD800']: 1 })).toEqual([{ field: '\uFFFD', message: expect.stringMatching(/^key .*lone surrogate/) }]);
  });

  it('prefixes paths with the root, and names a faulty root string by it', () => {
    expect(inputFaults({ q: 'a\u0000' }, 'query')).toEqual([{ field: 'query.q', message: expect.any(String) }]);
    expect(inputFaults('\u0000', '(path)')).toEqual([{ field: '(path)', message: expect.any(String) }]);
    expect(inputFaults('\u0000')).toEqual([{ field: '(body)', message: expect.any(String) }]);
  });

  it(`accepts ${INPUT_LIMITS.maxDepth} levels of nesting and refuses one more, naming where`, () => {
    expect(inputFaults(nest(INPUT_LIMITS.maxDepth))).toEqual([]);
    const faults = inputFaults(nest(INPUT_LIMITS.maxDepth + 1));
    expect(faults).toEqual([{ field: Array(INPUT_LIMITS.maxDepth).fill('a').join('.'), message: expect.stringMatching(/nested too deeply/) }]);
  });

  it('walks 100,000 levels (objects and arrays) without recursion and refuses them', () => {
    let arr: unknown = [];
    for (let i = 0; i < 100_000; i++) arr = [arr];
    expect(inputFaults(arr)).toHaveLength(1);
    expect(inputFaults(nest(100_000))).toHaveLength(1);
  });

  it(`names at most ${INPUT_LIMITS.maxFaults} faults and counts the rest`, () => {
    const faults = inputFaults(Array.from({ length: 120 }, () => '\u0000'));
    expect(faults).toHaveLength(INPUT_LIMITS.maxFaults + 1);
    expect(faults[0]).toEqual({ field: '[0]', message: expect.any(String) });
    expect(faults.at(-1)).toEqual({ field: '(body)', message: 'and 70 more faults of the same kinds' });
  });

  it('skips binary fields (gRPC bytes) and non-string scalars', () => {
    expect(inputFaults({ data: Buffer.from([0, 0, 0]), n: 0, b: false, u: undefined })).toEqual([]);
  });
});

describe('isValidUtf8', () => {
  it('tells UTF-8 from other bytes', () => {
    expect(isValidUtf8(Buffer.from('{"name":"Ada 👩"}'))).toBe(true);
    expect(isValidUtf8(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]))).toBe(false);
    // An encoded surrogate (CESU-8) is not UTF-8 either.
    expect(isValidUtf8(Buffer.from([0xed, 0xa0, 0x80]))).toBe(false);
  });
});
