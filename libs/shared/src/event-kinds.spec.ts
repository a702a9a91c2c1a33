// The catalogue cannot drift from what the code emits: every event-kind literal in the source of the apps and
// libs is in EVENT_KINDS, and every kind of the catalogue is emitted somewhere.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { EVENT_KIND } from './validation';
import { EVENT_KINDS, isEventKind } from './event-kinds';

const ROOT = path.resolve(__dirname, '../../..');

/** String literals of the kind families that are not event kinds (file names, settings). */
const NOT_EVENTS = new Set([
  'policy.wasm', // apps/policy: the compiled Rego bundle's file name
  'log.dirs', // libs/dev/src/testing/kafka.ts: a Kafka broker setting
]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'gen' ? [] : sourceFiles(p);
    return /\.ts$/.test(e.name) && !/\.(spec|test|d)\.ts$/.test(e.name) ? [p] : [];
  });
}

/** Apps that read event kinds but emit none (the admin console filters the log by them). */
const READERS = new Set(['apps/console']);

const files = ['apps', 'libs'].flatMap((top) =>
  readdirSync(path.join(ROOT, top), { withFileTypes: true })
    .filter((d) => d.isDirectory() && !READERS.has(`${top}/${d.name}`))
    .flatMap((d) => {
      const src = path.join(ROOT, top, d.name, 'src');
      try {
        return sourceFiles(src);
      } catch {
        return [];
      }
    }),
).filter((f) => f !== path.join(__dirname, 'event-kinds.ts'));

const families = new Set(EVENT_KINDS.map((k) => k.split('.')[0]));
const LITERAL = /['"`]([a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)+)['"`]/g;

/** Every quoted dotted literal of an event family in the source, with where it was seen. */
const literals = new Map<string, string>();
for (const file of files) {
  for (const m of readFileSync(file, 'utf8').matchAll(LITERAL)) {
    const value = m[1]!;
    if (families.has(value.split('.')[0]!) && !NOT_EVENTS.has(value) && !literals.has(value)) literals.set(value, path.relative(ROOT, file));
  }
}

describe('EVENT_KINDS', () => {
  it('scans the emitters (sanity: the scan sees the source)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(literals.get('policy.created')).toMatch(/^apps\/policy\/src\//);
  });

  it('holds every event kind the code emits', () => {
    const missing = [...literals].filter(([kind]) => !isEventKind(kind)).map(([kind, file]) => `${kind} (${file})`);
    expect(missing).toEqual([]);
  });

  it('holds only kinds the code emits, once each, each a well-formed kind', () => {
    expect(EVENT_KINDS.filter((k) => !literals.has(k))).toEqual([]);
    expect(new Set(EVENT_KINDS).size).toBe(EVENT_KINDS.length);
    for (const k of EVENT_KINDS) expect(k).toMatch(EVENT_KIND);
  });

  it('refuses what is not in it', () => {
    expect(isEventKind('user.login')).toBe(true);
    expect(isEventKind('user.nonsense')).toBe(false);
    expect(isEventKind('a')).toBe(false);
  });
});
