/** What the table knows of one documented path. */
export interface KnownRoute {
  /** The path in Express form, `/v1/users/:id`: the `route` label of the request metrics. */
  template: string;
  /** The methods served there (HEAD wherever GET, OPTIONS everywhere), sorted, as `Allow` lists them. */
  allow: string;
  methods: ReadonlySet<string>;
}

interface Node {
  literals: Map<string, Node>;
  param?: Node;
  route?: KnownRoute;
}

const node = (): Node => ({ literals: new Map() });

/**
 * The gateway's documented paths (the OpenAPI document's, where every public path is), matched as Express
 * routes them (case-insensitive, an optional trailing slash) and as OpenAPI resolves overlaps (a literal
 * segment before a template: /v1/policies/simulate, not /v1/policies/{id}). A match walks one segment at a
 * time, so it costs the same whatever the table's size: the request metrics resolve every request's route,
 * including those answered before routing (401, 429, 405, 413).
 */
export class RouteTable {
  private readonly root = node();

  constructor(paths: Record<string, Record<string, unknown>>) {
    for (const [path, item] of Object.entries(paths)) {
      const methods = new Set(Object.keys(item).map((m) => m.toUpperCase()));
      if (methods.has('GET')) methods.add('HEAD');
      methods.add('OPTIONS');
      let at = this.root;
      for (const segment of path.split('/').slice(1)) {
        if (/^\{[^}]+\}$/.test(segment)) at = at.param ??= node();
        else {
          const key = segment.toLowerCase();
          let next = at.literals.get(key);
          if (!next) at.literals.set(key, (next = node()));
          at = next;
        }
      }
      at.route = { template: path.replace(/\{([^}]+)\}/g, ':$1'), allow: [...methods].sort().join(', '), methods };
    }
  }

  /** The documented path `path` (no query string) falls under, if any. */
  match(path: string): KnownRoute | undefined {
    const segments = path.split('/');
    if (segments[0] !== '') return undefined;
    if (segments.length > 2 && segments[segments.length - 1] === '') segments.pop();
    return walk(this.root, segments, 1);
  }
}

function walk(at: Node, segments: string[], i: number): KnownRoute | undefined {
  if (i === segments.length) return at.route;
  const segment = segments[i]!;
  const literal = at.literals.get(segment.toLowerCase());
  const found = literal && walk(literal, segments, i + 1);
  if (found) return found;
  return at.param && segment !== '' ? walk(at.param, segments, i + 1) : undefined;
}
