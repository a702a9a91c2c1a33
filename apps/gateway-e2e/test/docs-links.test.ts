/**
 * The documentation's links: every relative link in README.md and docs/ points to a file inside the
 * repository, and every #anchor to a heading of that page (GitHub's heading slugs, -1, -2 for repeats).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '../../..');

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? markdownFiles(full) : name.endsWith('.md') ? [full] : [];
  });
}

/** The page's lines, with fenced code blocks blanked (links and headings there are not links and headings). */
function proseLines(file: string): string[] {
  let fenced = false;
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    });
}

function headingSlug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(file)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = headingSlug(m[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

function brokenLinks(): { links: number; broken: string[] } {
  const files = [path.join(root, 'README.md'), ...markdownFiles(path.join(root, 'docs'))];
  const broken: string[] = [];
  let links = 0;
  for (const file of files) {
    proseLines(file).forEach((line, i) => {
      for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const target = m[1]!;
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // another site
        links++;
        const [file_, fragment] = target.split('#') as [string, string | undefined];
        const dest = file_ ? path.resolve(path.dirname(file), file_) : file;
        const where = `${path.relative(root, file)}:${i + 1}: ${target}`;
        if (dest !== root && !dest.startsWith(root + path.sep)) broken.push(`${where}: outside the repository`);
        else if (!existsSync(dest)) broken.push(`${where}: no such file`);
        else if (fragment && (!dest.endsWith('.md') || !anchorsOf(dest).has(fragment))) broken.push(`${where}: no heading #${fragment}`);
      }
    });
  }
  return { links, broken };
}

describe('documentation links', () => {
  it('slugs headings as GitHub does', () => {
    expect(headingSlug('SSO (SAML 2.0)')).toBe('sso-saml-20');
    expect(headingSlug('Event bus: Kafka adapter')).toBe('event-bus-kafka-adapter');
    expect(headingSlug('`npm start` and [the launcher](x.md)')).toBe('npm-start-and-the-launcher');
  });

  it('every relative link in README.md and docs/ reaches a file in the repository, and its #anchor a heading', () => {
    const { links, broken } = brokenLinks();
    expect(links).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });
});
