import type { Server } from 'node:http';

/**
 * Stops an HTTP server gracefully: no new connections, requests in flight finish, and each kept-alive
 * connection is closed as soon as it is idle. (`server.close()` alone closes only the connections idle at that
 * moment: one whose response was still being written would stay open until its keep-alive timeout.) What is
 * still open after `forceAfterMs` is cut.
 */
export function drainHttpServer(server: Server, forceAfterMs = 10_000): Promise<void> {
  return new Promise<void>((resolve) => {
    const idle = setInterval(() => server.closeIdleConnections(), 50);
    const force = setTimeout(() => server.closeAllConnections(), forceAfterMs);
    force.unref();
    server.close(() => {
      clearInterval(idle);
      clearTimeout(force);
      resolve();
    });
    server.closeIdleConnections();
  });
}
