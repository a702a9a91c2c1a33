import type { AppError } from '@secsvc/shared';
import { AuthEventsService } from './auth-events';
import { FAKE_TRACE_ID, fakeCall, FakeDatabase, fakeLogger } from './testing/fakes';

function setup() {
  const db = new FakeDatabase();
  const logger = fakeLogger();
  return { db, logger, service: new AuthEventsService({ db, outbox: db, logger }) };
}

const gatewayCall = () => fakeCall({ 'x-client-ip': '198.51.100.4', 'x-user-agent': 'curl/8', 'x-auth-method': 'secret', 'x-actor-id': 'key_1' });

describe('AuthEventsService', () => {
  it('records auth.failed as anonymous, in live, with the caller context and no auth method', async () => {
    const { db, service } = setup();
    await service.authFailed(gatewayCall(), 'session', 'sst_', 'malformed');
    expect(db.events).toEqual([
      {
        actor: { type: 'anonymous' },
        context: { ip: '198.51.100.4', userAgent: 'curl/8' },
        authMethod: undefined,
        environment: 'live',
        type: 'auth.failed',
        result: 'failure',
        traceId: FAKE_TRACE_ID,
        metadata: { credential: 'session', prefix: 'sst_', reason: 'malformed' },
      },
    ]);
  });

  it('logs, never throws, when auth.failed cannot be written', async () => {
    const { db, logger, service } = setup();
    db.append = () => Promise.reject(new Error('down'));
    await service.authFailed(gatewayCall(), 'api_key', 'svc_sk_', 'unknown');
    expect(logger.warnings).toEqual(['could not record auth.failed']);
  });

  it('keeps a JWT refusal reason only when it is a short code', async () => {
    const { db, service } = setup();
    await service.jwtRefused('expired', gatewayCall());
    await service.jwtRefused('Bearer eyJhbGciOi...', gatewayCall());
    expect(db.events.map((e) => e.metadata)).toEqual([
      { credential: 'jwt', prefix: '', reason: 'expired' },
      { credential: 'jwt', prefix: '', reason: 'other' },
    ]);
  });

  it('records rate_limit.exceeded by the caller about its subject (an ip by the caller ip)', async () => {
    const { db, service } = setup();
    await service.rateLimitExceeded('test', { subjectType: 'ip', subjectId: '', limit: 60, windowSeconds: 60 }, gatewayCall());
    expect(db.events[0]).toMatchObject({
      environment: 'test',
      type: 'rate_limit.exceeded',
      actor: { id: 'key_1', type: 'api_key' },
      authMethod: 'secret',
      target: { id: '198.51.100.4', type: 'ip' },
      result: 'failure',
      metadata: { limit: 60, windowSeconds: 60, subject: 'ip' },
    });
  });

  it('refuses a malformed report, naming each field, and writes nothing', async () => {
    const { db, service } = setup();
    const err = await service.rateLimitExceeded('live', { subjectType: 'api_key', subjectId: 'user_1', limit: 0, windowSeconds: 1.5 }, gatewayCall()).catch((e: AppError) => e);
    expect((err as AppError).details.map((d) => d.field)).toEqual(['subjectId', 'limit', 'windowSeconds']);
    expect(db.events).toEqual([]);
  });
});
