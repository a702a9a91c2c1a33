import { createLogger } from '@secsvc/shared';
import { BackgroundWork } from './background';

const lines: string[] = [];
const logger = createLogger('test', 'warn', { write: (l: string) => void lines.push(l) });
const tick = () => new Promise((r) => setImmediate(r));

describe('BackgroundWork', () => {
  it('starts the work after the caller went on, and logs a failure instead of throwing it', async () => {
    const work = new BackgroundWork(logger);
    const order: string[] = [];
    work.run('first', async () => void order.push('work'));
    order.push('answered');
    work.run('broken', async () => {
      throw new Error('database down');
    });
    await work.close(1000);
    expect(order).toEqual(['answered', 'work']);
    expect(lines.some((l) => l.includes('background work failed') && l.includes('database down') && l.includes('broken'))).toBe(true);
  });

  it('waits at close for running work, then refuses new work', async () => {
    const work = new BackgroundWork(logger);
    let release!: () => void;
    let done = false;
    work.run('slow', () => new Promise<void>((r) => (release = r)).then(() => void (done = true)));
    await tick();
    expect(work.size).toBe(1);
    const closing = work.close(10_000);
    release();
    expect(await closing).toBe(0);
    expect(done).toBe(true);
    let ran = false;
    work.run('late', async () => void (ran = true));
    await tick();
    await tick();
    expect(ran).toBe(false);
  });

  it('gives up waiting after the time limit and says how much was left', async () => {
    const work = new BackgroundWork(logger);
    work.run('stuck', () => new Promise<void>(() => undefined));
    await tick();
    expect(await work.close(20)).toBe(1);
    expect(lines.some((l) => l.includes('still running at shutdown'))).toBe(true);
  });
});
