import { Metadata } from '@grpc/grpc-js';
import { eventOfCall } from './outbox';

const callFrom = (headers: Record<string, string>) => {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
  return { requestId: 'req_outboxspec0000000000', metadata };
};

describe('eventOfCall', () => {
  it("takes the caller, its context and how it authenticated from the gateway's metadata, and the caller's W3C trace id", () => {
    const call = callFrom({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'x-actor-id': 'key_1', 'x-actor-type': 'api_key', 'x-actor-name': 'ci', 'x-client-ip': '203.0.113.9', 'x-user-agent': 'curl/8', 'x-auth-method': 'secret' });
    expect(eventOfCall(call, { environment: 'live', type: 'policy.created', target: { id: 'pol_1', type: 'policy' }, result: 'success' })).toEqual({
      actor: { id: 'key_1', email: undefined, type: 'api_key', name: 'ci' },
      context: { ip: '203.0.113.9', userAgent: 'curl/8' },
      authMethod: 'secret',
      environment: 'live',
      type: 'policy.created',
      target: { id: 'pol_1', type: 'policy' },
      result: 'success',
      traceId: '0af7651916cd43dd8448eb211c80319c',
    });
  });

  it('lets the event name its own actor (a user logging in), keeping the context', () => {
    const event = eventOfCall(callFrom({ 'x-client-ip': '198.51.100.1' }), { actor: { email: 'who@example.com', type: 'anonymous' }, environment: 'test', type: 'user.login', result: 'failure' });
    expect(event.actor).toEqual({ email: 'who@example.com', type: 'anonymous' });
    expect(event.context.ip).toBe('198.51.100.1');
    expect(event.authMethod).toBe('none');
  });
});
