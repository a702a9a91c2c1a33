import net from 'node:net';
import { pingRedis, redisSkipReason, startTestRedis } from '@secsvc/dev/testing';

const skip = redisSkipReason();
if (skip) process.stderr.write(`SKIPPED "test Redis harness": ${skip}\n`);
const describeRedis = skip ? describe.skip : describe; // skip reason: no redis-server outside CI (CI=true throws instead)

/** One raw RESP command (inline form) and its first reply line. */
function command(port: number, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(`${line}\r\n`));
    socket.once('error', reject);
    socket.once('data', (chunk) => {
      socket.destroy();
      resolve(chunk.toString().split('\r\n')[0]!);
    });
  });
}

describeRedis('test Redis harness', () => {
  it('starts a real redis-server on 127.0.0.1 without persistence, restarts it on the same port, stops it', async () => {
    const redis = await startTestRedis();
    try {
      expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
      expect(await command(redis.port, 'SET harness 1')).toBe('+OK');
      await redis.restart();
      expect(await pingRedis(redis.port)).toBe(true);
      // a fresh server: nothing was persisted
      expect(await command(redis.port, 'GET harness')).toBe('$-1');
    } finally {
      await redis.stop();
    }
    expect(await pingRedis(redis.port)).toBe(false);
  });
});
