import type { Logger } from './logger';

export interface Closable {
  name: string;
  close: () => Promise<void>;
}

/**
 * On SIGTERM or SIGINT: close each step in order (stop accepting, drain, close pools), then exit 0. A step
 * that hangs past `timeoutMs` ends the process with exit 1 so an orchestrator does not wait forever.
 */
export function installShutdown(logger: Logger, steps: Closable[], timeoutMs = 15_000): () => Promise<void> {
  let running: Promise<void> | undefined;
  const shutdown = () => {
    running ??= (async () => {
      logger.info('shutting down');
      const timer = setTimeout(() => {
        logger.error('shutdown timed out');
        process.exit(1);
      }, timeoutMs);
      timer.unref();
      for (const step of steps) {
        try {
          await step.close();
        } catch (err) {
          logger.error({ err: { message: (err as Error).message }, step: step.name }, 'shutdown step failed');
        }
      }
      clearTimeout(timer);
      logger.info('stopped');
    })();
    return running;
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      void shutdown().then(() => process.exit(0));
    });
  }
  return shutdown;
}
