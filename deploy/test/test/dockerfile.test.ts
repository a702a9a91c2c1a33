/**
 * The root Dockerfile, checked statically (no Docker engine on these machines, and no hadolint): a pinned slim
 * Node 20 base, no remote ADD or downloads, dependencies from the lock file, every workspace's manifest copied
 * before the install, a non-root user in every app image, one target per app whose command the Kubernetes
 * manifests use, and runtime files that exist.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describeWithTools, find, objects, rootDir } from './support/tools';

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

const APPS = ['gateway', 'identity', 'policy', 'audit', 'export-worker'];
const text = readFileSync(path.join(rootDir, 'Dockerfile'), 'utf8');
const parsed = stages(parseDockerfile(text));
const stage = (name: string) => parsed.stages.find((s) => s.name === name)!;
/** A stage and the stages it is built FROM, nearest first. */
const lineage = (name: string): Stage[] => {
  const s = stage(name);
  return s ? [s, ...lineage(s.from)] : [];
};

describe('Dockerfile', () => {
  it('builds from a pinned Node 20 slim image, never latest', () => {
    const nodeImage = parsed.args.find((a) => a.op === 'ARG' && a.args.startsWith('NODE_IMAGE='))!;
    expect(nodeImage.args).toMatch(/^NODE_IMAGE=node:20\.\d+\.\d+-[a-z]+-slim$/);
    for (const s of parsed.stages) {
      // Every stage starts from the pinned base or an earlier stage.
      expect([s.name, s.from === '${NODE_IMAGE}' || parsed.stages.some((p) => p.name === s.from)]).toEqual([s.name, true]);
    }
  });

  it('fetches nothing but packages: no ADD, no curl or wget, installs from the lock file', () => {
    const all = parsed.stages.flatMap((s) => s.instructions);
    expect(all.filter((i) => i.op === 'ADD')).toEqual([]);
    expect(all.filter((i) => i.op === 'RUN' && /\b(curl|wget)\b|https?:\/\//.test(i.args))).toEqual([]);
    const runs = stage('build').instructions.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm install\b(?!\s+--global)/.test(r))).toBe(false);
    expect(runs.some((r) => /npm prune --omit=dev/.test(r))).toBe(true);
  });

  it('copies every workspace manifest before npm ci (so the install layer is complete and cacheable)', () => {
    const build = stage('build').instructions;
    const ci = build.findIndex((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args));
    const copied = build.slice(0, ci).filter((i) => i.op === 'COPY').flatMap((i) => i.args.split(/\s+/).slice(0, -1));
    const root = JSON.parse(readFileSync(path.join(rootDir, 'package.json'), 'utf8')) as { workspaces: string[] };
    const manifests = root.workspaces.flatMap((glob) => {
      const dir = glob.replace(/\/\*$/, '');
      return readdirSync(path.join(rootDir, dir), { withFileTypes: true })
        .filter((d) => d.isDirectory() && existsSync(path.join(rootDir, dir, d.name, 'package.json')))
        .map((d) => `${dir}/${d.name}/package.json`);
    });
    expect(manifests.length).toBeGreaterThanOrEqual(9);
    for (const m of ['package.json', 'package-lock.json', ...manifests]) expect(copied).toContain(m);
  });

  it('runs every app image as the non-root user 10001, and nothing after switches back', () => {
    for (const app of APPS) {
      const chain = lineage(app);
      const users = chain.flatMap((s) => s.instructions.filter((i) => i.op === 'USER').map((i) => i.args));
      expect([app, users]).toEqual([app, ['10001:10001']]);
      // Nothing runs or is copied in after the USER line (no root-owned writes by later steps).
      for (const s of chain.slice(0, chain.indexOf(stage('runtime')))) expect(s.instructions.filter((i) => ['RUN', 'COPY', 'ADD', 'USER'].includes(i.op))).toEqual([]);
      const runtime = stage('runtime').instructions;
      const userAt = runtime.findIndex((i) => i.op === 'USER');
      expect(runtime.slice(userAt + 1).filter((i) => ['RUN', 'COPY', 'ADD'].includes(i.op))).toEqual([]);
    }
    expect(stage('runtime').instructions.some((i) => i.op === 'RUN' && /useradd .*--uid 10001/.test(i.args))).toBe(true);
  });

  it('copies runtime files that exist in the repository (migrations, the policy wasm, protos) or are build outputs', () => {
    const sources = stage('runtime')
      .instructions.filter((i) => i.op === 'COPY' && i.args.startsWith('--from=build'))
      .map((i) => i.args.split(/\s+/)[1]!.replace(/^\/src\//, ''));
    for (const src of sources) {
      const generated = /(^|\/)(dist|node_modules)$/.test(src);
      expect([src, generated || existsSync(path.join(rootDir, src))]).toEqual([src, true]);
    }
    for (const dir of ['apps/identity/migrations', 'apps/policy/migrations', 'libs/audit-store/migrations', 'apps/policy/rego/policy.wasm']) expect(sources).toContain(dir);
    for (const app of APPS) expect(sources).toContain(`apps/${app}/dist`);
  });

  it('keeps local data, secrets and installed modules out of the build context', () => {
    const ignored = readFileSync(path.join(rootDir, '.dockerignore'), 'utf8').split('\n');
    for (const entry of ['**/node_modules', '**/dist', '.git', '.data', 'deploy/k8s/secret.env']) expect(ignored).toContain(entry);
  });
});

describeWithTools('Dockerfile and the manifests', () => {
  it('has one target per app whose command and user the Deployments use', () => {
    for (const overlay of ['overlays/dev', 'overlays/prod']) {
      for (const app of APPS) {
        const cmd = stage(app).instructions.find((i) => i.op === 'CMD')!;
        const deployment = find(objects(overlay), 'Deployment', app);
        const pod = deployment.spec.template.spec;
        expect(JSON.parse(cmd.args)).toEqual(pod.containers[0].command);
        expect(pod.containers[0].workingDir).toBe(stage('runtime').instructions.find((i) => i.op === 'WORKDIR')!.args);
        expect(pod.securityContext.runAsUser).toBe(10001);
      }
    }
  });
});
