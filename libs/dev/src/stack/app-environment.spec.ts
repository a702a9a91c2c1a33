import { readFileSync } from 'node:fs';
import path from 'node:path';
import { APP_NAMES, APP_VARIABLES, appEnvironment, launcherEnvironment, type AppName, type LauncherWiring } from './app-environment';

const root = path.resolve(__dirname, '../../../..');

interface Row {
  names: string[];
  apps: AppName[];
  launcher: boolean;
  /** The default column says the launcher sets it (wiring the user cannot override). */
  setByLauncher: boolean;
  line: string;
}

/** docs/configuration.md's "## Configuration" table; "all" is every app, "same" the previous row's apps. */
function configurationTable(): Row[] {
  const readme = readFileSync(path.join(root, 'docs/configuration.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Configuration\n'));
  const lines = section.slice(0, section.indexOf('\n## ', 5)).split('\n');
  const header = lines.findIndex((l) => l.startsWith('| variable | used by | default | meaning |'));
  expect(header).toBeGreaterThan(0);
  const rows: Row[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split(' | ');
    expect({ line, cells: cells.length }).toEqual({ line, cells: 4 });
    const names = [...cells[0]!.matchAll(/`([A-Z0-9_]+)`/g)].map((m) => m[1]!);
    expect({ line, names: names.length > 0 }).toEqual({ line, names: true });
    const users = cells[1]!.split(',').map((s) => s.trim());
    let apps: AppName[] = [];
    let launcher = false;
    for (const user of users) {
      if (user === 'same') apps.push(...rows[rows.length - 1]!.apps);
      else if (user === 'all') apps.push(...APP_NAMES);
      else if (user === 'launcher') launcher = true;
      else if ((APP_NAMES as readonly string[]).includes(user)) apps.push(user as AppName);
      else throw new Error(`README configuration table: unknown "used by" entry "${user}" in ${line}`);
    }
    apps = [...new Set(apps)];
    rows.push({ names, apps, launcher, setByLauncher: cells[2]!.includes('set by the launcher'), line });
  }
  return rows;
}

const rows = configurationTable();
/** Per variable (a variable may have a row per app, e.g. AUDIT_ADDR): its apps, and whether the launcher may set it. */
const documented = new Map<string, { apps: Set<AppName>; launcherOnly: boolean; launcherMaySet: boolean }>();
for (const row of rows) {
  for (const name of row.names) {
    const d = documented.get(name) ?? { apps: new Set<AppName>(), launcherOnly: true, launcherMaySet: false };
    for (const app of row.apps) d.apps.add(app);
    d.launcherOnly &&= row.apps.length === 0;
    d.launcherMaySet ||= row.launcher || row.setByLauncher;
    documented.set(name, d);
  }
}
const readers = (name: string) => APP_NAMES.filter((app) => APP_VARIABLES[app].includes(name));

const wiring = (profile: LauncherWiring['profile'], app: AppName): LauncherWiring => ({
  profile,
  dataDir: '/launcher/data',
  databaseUrl: 'postgres://launcher@127.0.0.1:1/secsvc',
  serverSecret: 'launcher-secret-launcher-secret-launcher',
  issuer: 'http://launcher:1',
  addresses: { identity: '127.0.0.1:2', policy: '127.0.0.1:3', audit: '127.0.0.1:4' },
  adminPort: 5,
  ...(app === 'gateway' ? { gatewayHost: '127.0.0.1', gatewayPort: 6 } : app === 'export-worker' ? {} : { grpcPort: 7 }),
  samlSp: { SAML_SP_KEY_FILE: '/launcher/data/saml-sp/sp.key', SAML_SP_CERT_FILE: '/launcher/data/saml-sp/sp.crt' },
  ...(profile === 'distributed' && {
    distributed: {
      kafkaBrokers: '127.0.0.1:8',
      redisUrl: 'redis://127.0.0.1:9',
      s3: { EXPORT_STORE: 's3', S3_BUCKET: 'launcher', S3_ENDPOINT: 'http://127.0.0.1:10', S3_REGION: 'launcher', S3_ACCESS_KEY_ID: 'l', S3_SECRET_ACCESS_KEY: 'l', S3_FORCE_PATH_STYLE: 'true' },
    },
  }),
});

describe('APP_VARIABLES', () => {
  it.each(APP_NAMES)('lists exactly what the config shape of %s reads', async (app) => {
    // Loaded by path at run time: libs/shared does not depend on the apps (they depend on it).
    const mod = (await import(path.join(root, 'apps', app, 'src', 'config.ts'))) as Record<string, unknown>;
    const shapes = Object.entries(mod).filter(([name]) => name.endsWith('ConfigShape'));
    expect(shapes).toHaveLength(1);
    const variables = APP_VARIABLES[app];
    expect(new Set(variables).size).toBe(variables.length);
    expect([...variables].sort()).toEqual(Object.keys(shapes[0]![1] as object).sort());
  });
});

describe('docs/configuration.md configuration table', () => {
  it('documents every variable an app reads, for exactly the apps that read it', () => {
    const problems: string[] = [];
    for (const app of APP_NAMES) {
      for (const name of APP_VARIABLES[app]) {
        if (!documented.has(name)) problems.push(`${name} (read by ${app}) has no row`);
      }
    }
    for (const [name, d] of documented) {
      const want = readers(name).sort();
      if (want.join() !== [...d.apps].sort().join()) problems.push(`${name}: "used by" says [${[...d.apps].sort()}], the config shapes read it in [${want}]`);
    }
    expect(problems).toEqual([]);
  });

  it.each(['local', 'distributed'] as const)(
    '%s launcher: a variable in the user environment reaches exactly the processes that read it, unless documented as the launcher\'s',
    (profile) => {
      const userEnv: Record<string, string> = { UNRELATED_SECRET: 'x', REPLICAS: '3' };
      for (const name of documented.keys()) userEnv[name] = `user-${name}`;
      const envs = Object.fromEntries(APP_NAMES.map((app) => [app, appEnvironment(app, userEnv, launcherEnvironment(wiring(profile, app)))])) as Record<AppName, Record<string, string>>;
      const problems: string[] = [];
      for (const [name, d] of documented) {
        const reached = APP_NAMES.filter((app) => envs[app][name] === userEnv[name]);
        const set = APP_NAMES.filter((app) => name in envs[app]);
        if (set.some((app) => !d.apps.has(app))) problems.push(`${name} reaches [${set}], documented for [${[...d.apps]}]`);
        const overridden = [...d.apps].filter((app) => !reached.includes(app));
        if (overridden.length > 0 && !d.launcherMaySet) problems.push(`${name}: the user's value does not reach [${overridden}] and the table does not say the launcher sets it`);
      }
      expect(problems).toEqual([]);
      for (const app of APP_NAMES) {
        expect(envs[app]).not.toHaveProperty('UNRELATED_SECRET');
        expect(envs[app]).not.toHaveProperty('REPLICAS');
        for (const [name, d] of documented) if (d.launcherOnly) expect(envs[app]).not.toHaveProperty(name);
      }
    },
  );

  it('documents launcher-only variables without any process reading them', () => {
    for (const [name, d] of documented) if (d.launcherOnly) expect({ name, readers: readers(name) }).toEqual({ name, readers: [] });
    expect(documented.get('DATA_DIR')?.launcherOnly).toBe(true);
  });
});

describe('appEnvironment', () => {
  it('gives the user value over launcher defaults, but keeps the launcher wiring', () => {
    const user = { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '7', RATE_LIMIT_STORE: 'memory', SERVER_SECRET: 'u'.repeat(32), DATABASE_URL: 'postgres://user@elsewhere/db', IDENTITY_ADDR: '10.0.0.1:1', PORT: '1', GRPC_PORT: '1', PROFILE: 'local', REDIS_URL: 'redis://user:1' };
    const gateway = appEnvironment('gateway', user, launcherEnvironment(wiring('distributed', 'gateway')));
    expect(gateway).toMatchObject({ RATE_LIMIT_ANONYMOUS_PER_MINUTE: '7', RATE_LIMIT_STORE: 'memory', IDENTITY_ADDR: '127.0.0.1:2', PORT: '6', PROFILE: 'distributed', REDIS_URL: 'redis://127.0.0.1:9' });
    const identity = appEnvironment('identity', user, launcherEnvironment(wiring('local', 'identity')));
    expect(identity).toMatchObject({ SERVER_SECRET: 'u'.repeat(32), DATABASE_URL: 'postgres://launcher@127.0.0.1:1/secsvc', GRPC_PORT: '7', PROFILE: 'local' });
    expect(identity).not.toHaveProperty('RATE_LIMIT_ANONYMOUS_PER_MINUTE');
  });

  it('fills launcher defaults where the user set nothing; an explicit empty value replaces a default', () => {
    const gateway = appEnvironment('gateway', { SAML_SP_KEY_FILE: '', SAML_SP_CERT_FILE: '' }, launcherEnvironment(wiring('local', 'gateway')));
    expect(gateway).toMatchObject({ SAML_SP_KEY_FILE: '', SAML_SP_CERT_FILE: '', ISSUER: 'http://launcher:1', DOWNLOAD_BASE_URL: 'http://launcher:1/downloads', HOST: '127.0.0.1', PORT: '6', ADMIN_PORT: '5', GATEWAY_WORKERS: '1' });
    expect(appEnvironment('gateway', { GATEWAY_WORKERS: '4' }, launcherEnvironment(wiring('local', 'gateway')))).toMatchObject({ GATEWAY_WORKERS: '4' });
    const audit = appEnvironment('audit', {}, launcherEnvironment(wiring('local', 'audit')));
    expect(audit).toMatchObject({ CLICKHOUSE_PATH: '/launcher/data/clickhouse', EXPORT_DIR: '/launcher/data/exports', SERVER_SECRET: 'launcher-secret-launcher-secret-launcher', MIGRATE_ONLY: 'false' });
    expect(audit).not.toHaveProperty('PORT');
  });

  it('passes the runtime variables, NODE_ENV production by default, and drops undefined values', () => {
    const env = appEnvironment('export-worker', { PATH: '/bin', AWS_PROFILE: 'p', NODE_EXTRA_CA_CERTS: '/ca.pem', NODE_OPTIONS: '--inspect', EXPORT_POLL_MS: undefined }, {});
    expect(env).toEqual({ PATH: '/bin', AWS_PROFILE: 'p', NODE_EXTRA_CA_CERTS: '/ca.pem', NODE_ENV: 'production' });
    expect(appEnvironment('policy', { NODE_ENV: 'development' }, { wired: { DATABASE_URL: undefined } })).toEqual({ NODE_ENV: 'development' });
    expect(appEnvironment('policy', { DATABASE_URL: 'postgres://x' }, { wired: { DATABASE_URL: undefined } })).toEqual({ NODE_ENV: 'production' });
  });
});
