import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createLogger } from '@secsvc/shared';
import { answerClientErrors } from '../src/http/client-errors';

/** Sends raw bytes and reads what comes back until the server closes the connection. */
function raw(server: Server, bytes: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = data.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
    socket.write(bytes);
  });
}

describe('requests the HTTP parser refuses', () => {
  let server: Server;
  beforeAll(async () => {
    // A short request timeout, checked often, so the 408 case takes a moment.
    server = createServer({ requestTimeout: 300, connectionsCheckingInterval: 50 }, (req, res) => {
      if (req.url === '/slow') setTimeout(() => res.end('slow'), 200);
      else if (req.url === '/read') req.on('data', () => undefined).on('end', () => res.end('read'));
      else res.end('served');
    });
    answerClientErrors(server, createLogger('client-errors-test', 'silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const expectError = (res: { status: number; headers: Record<string, string>; body: string }, status: number, code: string, message: string) => {
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers.connection).toBe('close');
    expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-z]{26}$/);
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    expect(JSON.parse(res.body)).toEqual({ error: { code, message }, meta: { requestId: res.headers['x-request-id'] } });
  };

  it('a request line and headers over the limit: 431 in the error shape', async () => {
    const res = await raw(server, `GET /v1/logs?events=${'x'.repeat(20_000)} HTTP/1.1\r\nHost: a\r\n\r\n`);
    expectError(res, 431, 'request_header_fields_too_large', 'The request line and headers are larger than 16 KiB (a query string that long included)');
  });

  it('malformed HTTP: 400 invalid_request in the error shape', async () => {
    expectError(await raw(server, 'NOT HTTP AT ALL\r\n\r\n'), 400, 'invalid_request', 'The request is not well-formed HTTP/1.1');
    expectError(await raw(server, 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n'), 400, 'invalid_request', 'The request is not well-formed HTTP/1.1');
  });

  it('a request that does not arrive in full in time: 408 in the error shape', async () => {
    expectError(await raw(server, 'GET / HTTP/1.1\r\nHost: a\r\n'), 408, 'request_timeout', 'The request did not arrive in full in time');
  });

  it('an error in a body being read ends the connection without an answer (its request is being served: no second answer is safe)', async () => {
    const res = await raw(server, `POST /read HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1;${'e'.repeat(20_000)}\r\nx\r\n0\r\n\r\n`);
    expect(res.status).toBeNaN();
    expect(res.body).toBe('');
  });

  it('on a kept-alive connection, bad bytes after a finished exchange get their own answer', async () => {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    let data = '';
    socket.on('data', (d) => (data += d.toString()));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.write('GET / HTTP/1.1\r\nHost: a\r\n\r\n');
    while (!data.includes('served')) await new Promise((r) => setTimeout(r, 10));
    // (The server detaches a response from its socket when it has finished writing it, a moment after the client
    // may have read it; bytes arriving before that find the response still attached: the case below.)
    await new Promise((r) => setTimeout(r, 100));
    socket.write('NOT HTTP AT ALL\r\n\r\n');
    await closed;
    expect(data.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400']);
    expect(data).toContain('"code":"invalid_request"');
  });

  it('bad bytes pipelined behind a request still being served end the connection: no request gets another one\'s answer', async () => {
    const res = await raw(server, 'GET /slow HTTP/1.1\r\nHost: a\r\n\r\nNOT HTTP AT ALL\r\n\r\n');
    expect(res.status).toBeNaN();
    expect(res.body).toBe('');
  });

  it('well-formed requests are served as before', async () => {
    const res = await raw(server, 'GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n');
    expect(res.status).toBe(200);
    expect(res.body).toBe('served');
  });
});
