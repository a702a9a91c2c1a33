import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { BOOTSTRAP_MARKER } from '@secsvc/shared';
import type { Supervisor } from './supervisor';

/**
 * One app of the stack as a child process (`node apps/<app>/dist/main.js`), in its own process group (a
 * terminal's Ctrl-C reaches only the launcher, which stops the apps in order) with an open stdin pipe (if the
 * launcher dies, the pipe closes and the app shuts itself down: SECSVC_EXIT_WITH_PARENT). Keeps the last
 * output lines for error messages.
 */
export class AppProcess {
  private child: ChildProcess | undefined;
  private expectingExit = false;
  readonly lastLines: string[] = [];

  constructor(
    readonly name: string,
    private readonly o: {
      rootDir: string;
      app: string;
      env: Record<string, string | undefined>;
      nodeArgs?: string[];
      /** Every output line (a line the caller claims by returning true is not kept in lastLines). */
      onLine?: (line: string) => boolean | void;
      /** The process ended without stop()/restart() asking it to. */
      onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
    },
  ) {}

  start(): void {
    const child = spawn(process.execPath, [...(this.o.nodeArgs ?? []), path.join(this.o.rootDir, 'apps', this.o.app, 'dist', 'main.js')], {
      cwd: this.o.rootDir,
      env: { ...this.o.env, SECSVC_EXIT_WITH_PARENT: '1' },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child = child;
    this.expectingExit = false;
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        if (this.o.onLine?.(line) === true) return;
        this.lastLines.push(line);
        if (this.lastLines.length > 20) this.lastLines.shift();
      });
    }
    child.once('exit', (code, signal) => {
      if (!this.expectingExit) this.o.onUnexpectedExit?.(code, signal);
    });
  }

  /** The running child's process id. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Sends `signal` (SIGKILL after `graceMs` if it is still running); resolves with the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 15_000): Promise<number | null> {
    const child = this.child;
    if (!child) return null;
    this.expectingExit = true;
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }
}

/** Polls `check` every 100 ms until it holds; fails with `failed()`'s reason or after the deadline. */
export async function waitUntil(what: string, check: () => Promise<boolean>, deadline: number, failed: () => string | undefined = () => undefined) {
  for (;;) {
    const failure = failed();
    if (failure) throw new Error(failure);
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} did not become healthy in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** True when `url` answers 2xx within a second. */
export async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
  return res.ok;
}

/**
 * An app started by a launcher: the bootstrap key line it prints goes to `bootstrapKey` (never to the output),
 * an exit during start-up is the start's failure, and an exit after it is the supervisor's to restart.
 */
export function supervisedApp<N extends string>(
  name: N,
  o: {
    rootDir: string;
    app: string;
    env: Record<string, string | undefined>;
    nodeArgs?: string[];
    supervisor: Pick<Supervisor<N>, 'stopping' | 'crashed'>;
    started: () => boolean;
    startupFailed: (reason: string) => void;
    bootstrapKey: (key: string) => void;
    out: (name: N, line: string) => void;
  },
): AppProcess {
  const proc: AppProcess = new AppProcess(name, {
    rootDir: o.rootDir,
    app: o.app,
    env: o.env,
    nodeArgs: o.nodeArgs,
    onLine: (line) => {
      if (line.startsWith(BOOTSTRAP_MARKER + ' ')) {
        o.bootstrapKey(line.slice(BOOTSTRAP_MARKER.length + 1).trim());
        return true;
      }
      o.out(name, line);
      return false;
    },
    onUnexpectedExit: (code, signal) => {
      if (o.supervisor.stopping) return;
      if (!o.started()) return o.startupFailed(`${name} exited (${signal ?? `code ${code}`}) during start-up:\n${proc.lastLines.join('\n')}`);
      // Supervised: started again after a backoff; a crash loop is reported, the others keep running.
      o.supervisor.crashed(name, { code, signal }, () => {
        if (!proc.running) proc.start();
      });
    },
  });
  return proc;
}
