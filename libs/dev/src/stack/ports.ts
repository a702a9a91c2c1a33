import { readFileSync } from 'node:fs';
import net from 'node:net';

/** The lowest port the kernel hands out for outgoing connections (Linux: ip_local_port_range, else 32768). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 11_000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}
const LOW = 10_000;
const HIGH = ephemeralLow() - 1;

/** Ports this process has handed out. */
const handedOut = new Set<number>();

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const { port: bound } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * A free TCP port on 127.0.0.1 for a server started a moment later. It is picked at random BELOW the kernel's
 * ephemeral range: a port from that range (what listen(0) returns) can be taken in the meantime as the local
 * port of any outgoing connection on the machine, which made servers fail with EADDRINUSE under load.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const candidate = LOW + Math.floor(Math.random() * (HIGH - LOW));
    // Never the same port twice in one process: a port handed out is bound a moment later, not at once, so a
    // second pick of it (another server of the same stack) would pass the probe and fail with EADDRINUSE.
    if (handedOut.has(candidate)) continue;
    const port = await tryListen(candidate);
    if (port !== undefined) {
      handedOut.add(port);
      return port;
    }
  }
  const port = await tryListen(0);
  if (port === undefined) throw new Error('no free TCP port on 127.0.0.1');
  return port;
}
