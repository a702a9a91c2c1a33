import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Where scripts/install-tools.sh installs command-line tools: $SECSVC_TOOLS_DIR or ~/.cache/secsvc/bin. */
export const toolsDir = (): string => process.env.SECSVC_TOOLS_DIR ?? path.join(os.homedir(), '.cache', 'secsvc', 'bin');

/**
 * A test dependency's binary: the path in `$envVar`, else `name` in the tools folder, on PATH or in the
 * extra places given. Missing under CI=true throws `hint` (CI installs every tool, so nothing may skip).
 */
export function findTool(name: string, envVar: string, hint: string, extra: string[] = []): string | undefined {
  const candidates = [
    process.env[envVar],
    path.join(toolsDir(), name),
    ...(process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, name)),
    ...extra,
  ];
  const found = candidates.find((c): c is string => !!c && existsSync(c));
  if (!found && process.env.CI === 'true') throw new Error(`${name} is missing: ${hint}`);
  return found;
}

/** How a test or a launcher starts one of the harness's servers (redis-server, versitygw). */
export interface HarnessServerOptions {
  /** The server's binary (default: the one scripts/install-tools.sh installs, else on PATH). */
  binary?: string;
  startTimeoutMs?: number;
  /** The server exited after start-up without stop() or restart() asking it to (a launcher restarts it). */
  onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}
