import { Writable } from 'node:stream';
import { requestContext } from './context';
import { createLogger } from './logger';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger('svc', 'info', stream), lines };
}

const trace = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };

describe('createLogger', () => {
  it('marks a line logged inside a request with its request id, trace id and span id', () => {
    const { logger, lines } = capture();
    requestContext.run({ requestId: 'req_0123456789', trace }, () => logger.info('inside'));
    requestContext.run({ requestId: 'req_0123456789' }, () => logger.info('no trace'));
    logger.info('outside');
    expect(lines[0]).toMatchObject({ service: 'svc', msg: 'inside', requestId: 'req_0123456789', traceId: trace.traceId, spanId: trace.spanId });
    expect(lines[1]).toMatchObject({ msg: 'no trace', requestId: 'req_0123456789' });
    expect(lines[1]).not.toHaveProperty('traceId');
    expect(lines[2]).not.toHaveProperty('requestId');
    expect(lines[2]).not.toHaveProperty('traceId');
  });

  it('never writes credentials it is handed', () => {
    const { logger, lines } = capture();
    logger.info({ req: { headers: { authorization: 'Bearer svc_sk_secret', cookie: 'sid=secret' } }, body: { password: 'hunter2', token: 't' } }, 'x');
    const text = JSON.stringify(lines[0]);
    for (const secret of ['svc_sk_secret', 'sid=secret', 'hunter2', '"t"']) expect(text).not.toContain(secret);
  });
});
