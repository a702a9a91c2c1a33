import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { installShutdown } from './shutdown';

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

function captureLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  return { logger: createLogger('test', 'info', stream), lines };
}

describe('installShutdown', () => {
  let listenersBefore: Map<string, ((...args: unknown[]) => void)[]>;
  let exit: jest.SpyInstance;

  beforeEach(() => {
    listenersBefore = new Map(SIGNALS.map((s) => [s, process.listeners(s) as ((...args: unknown[]) => void)[]]));
    exit = jest.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
  });

  afterEach(() => {
    // remove only the signal listeners this test added
    for (const s of SIGNALS) {
      for (const l of process.listeners(s)) if (!listenersBefore.get(s)!.includes(l as never)) process.removeListener(s, l);
    }
    exit.mockRestore();
    jest.useRealTimers();
  });

  it('closes the steps in order', async () => {
    const order: string[] = [];
    const { logger } = captureLogger();
    const shutdown = installShutdown(logger, [
      { name: 'server', close: async () => void order.push('server') },
      { name: 'consumer', close: async () => void order.push('consumer') },
      { name: 'pool', close: async () => void order.push('pool') },
    ]);
    await shutdown();
    expect(order).toEqual(['server', 'consumer', 'pool']);
  });

  it('keeps closing the next steps when one fails, and logs the failure', async () => {
    const order: string[] = [];
    const { logger, lines } = captureLogger();
    const shutdown = installShutdown(logger, [
      { name: 'server', close: async () => { throw new Error('already closed'); } },
      { name: 'pool', close: async () => void order.push('pool') },
    ]);
    await shutdown();
    expect(order).toEqual(['pool']);
    expect(lines.some((l) => l.step === 'server' && l.level === 'error')).toBe(true);
  });

  it('runs once when called several times', async () => {
    let closes = 0;
    const { logger } = captureLogger();
    const shutdown = installShutdown(logger, [{ name: 'x', close: async () => void closes++ }]);
    await Promise.all([shutdown(), shutdown()]);
    await shutdown();
    expect(closes).toBe(1);
  });

  it('listens to SIGTERM and SIGINT', () => {
    const { logger } = captureLogger();
    installShutdown(logger, []);
    for (const s of SIGNALS) expect(process.listenerCount(s)).toBe(listenersBefore.get(s)!.length + 1);
  });

  it('exits 1 when a step hangs past the timeout', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    const { logger } = captureLogger();
    const shutdown = installShutdown(logger, [{ name: 'stuck', close: () => new Promise<void>(() => undefined) }], 1000);
    void shutdown();
    await Promise.resolve();
    expect(exit).not.toHaveBeenCalled();
    jest.advanceTimersByTime(1001);
    expect(exit).toHaveBeenCalledWith(1);
  });

  it('does not exit 1 later when every step finished in time', async () => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    const { logger } = captureLogger();
    const shutdown = installShutdown(logger, [{ name: 'quick', close: async () => undefined }], 1000);
    await shutdown();
    jest.advanceTimersByTime(5000);
    expect(exit).not.toHaveBeenCalledWith(1);
  });
});
