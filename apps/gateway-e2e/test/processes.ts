/** What the launcher tests see of a launcher's process tree, read from /proc. */
import { readdir, readFile } from 'node:fs/promises';

/** The launcher's descendants (its apps, PostgreSQL and PostgreSQL's own processes), with their command lines. */
export async function descendantsOf(pid: number): Promise<{ pid: number; command: string }[]> {
  const parents = new Map<number, number>();
  const commands = new Map<number, string>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid ...: the command may hold spaces and parentheses, so read after the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!ppid) continue;
    parents.set(Number(entry), ppid);
    commands.set(Number(entry), (await readFile(`/proc/${entry}/cmdline`).catch(() => Buffer.alloc(0))).toString().replace(/\0/g, ' ').trim());
  }
  const found: { pid: number; command: string }[] = [];
  const visit = (parent: number) => {
    for (const [child, ppid] of parents) {
      if (ppid !== parent) continue;
      found.push({ pid: child, command: commands.get(child) ?? '' });
      visit(child);
    }
  };
  visit(pid);
  return found;
}

/** Those of `processes` still running the same command (a pid reused by another program does not count). */
export async function stillRunning(processes: { pid: number; command: string }[]) {
  const alive: { pid: number; command: string }[] = [];
  for (const p of processes) {
    const command = (await readFile(`/proc/${p.pid}/cmdline`).catch(() => Buffer.alloc(0))).toString().replace(/\0/g, ' ').trim();
    if (command && command === p.command) alive.push(p);
  }
  return alive;
}
