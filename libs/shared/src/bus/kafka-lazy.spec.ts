import type * as Shared from '../index';
import { createLogger } from '../logger';

test('loading the library leaves the Kafka clients unloaded until a Kafka bus is created (they take ~50 MB a process)', async () => {
  let shared: typeof Shared | undefined;
  jest.isolateModules(() => {
    jest.doMock('@platformatic/kafka', () => {
      throw new Error('@platformatic/kafka loaded');
    });
    jest.doMock('kafkajs', () => {
      throw new Error('kafkajs loaded');
    });
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh copy of the library under the mocks above
    shared = require('../index') as typeof Shared;
  });
  expect(typeof shared!.createEventBus).toBe('function');
  // Creating a Kafka bus is what loads them.
  await expect(shared!.createKafkaBus({ brokers: ['127.0.0.1:9'], logger: createLogger('kafka-lazy-spec', 'silent') })).rejects.toThrow(/(@platformatic\/kafka|kafkajs) loaded/);
});
