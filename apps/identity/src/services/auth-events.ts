import { AppError, callerOf, eventOfCall, isId, TurnBatch, type CallContext, type EventInput } from '@secsvc/shared';
import type { Database, Outbox, WarningLog } from './ports';

// The security events no change carries: refused credentials (auth.failed) and callers over their rate limit
// (rate_limit.exceeded), written outside any transaction: those reported in one turn of the event loop (a
// gateway's batch of refusals under load) in one statement.

export interface AuthEventsDeps {
  db: Database;
  outbox: Outbox;
  logger: WarningLog;
}

export type RefusedCredential = 'api_key' | 'session' | 'jwt';

const SUBJECTS = { api_key: 'key', user: 'user', ip: undefined } as const;

export interface RateLimitReport {
  subjectType: string;
  subjectId: string;
  limit: number;
  windowSeconds: number;
}

export class AuthEventsService {
  private readonly written: TurnBatch<EventInput, string>;

  constructor(private readonly deps: AuthEventsDeps) {
    this.written = new TurnBatch((events) => deps.outbox.appendAll(deps.db.pool, events));
  }

  /**
   * auth.failed for a refused credential. Only the credential's prefix is kept, never the value; a failure to
   * write it is logged, never thrown (the refusal stands either way).
   */
  async authFailed(call: CallContext, credential: RefusedCredential, prefix: string, reason: string): Promise<void> {
    const event = eventOfCall(call, {
      actor: { type: 'anonymous' },
      environment: 'live',
      type: 'auth.failed',
      result: 'failure',
      metadata: { credential, prefix, reason },
    });
    // The refused credential authenticated nothing: no auth method, whatever the call's metadata says.
    await this.written
      .add({ ...event, authMethod: undefined })
      .then(() => undefined)
      .catch((err: unknown) => this.deps.logger.warn({ err: { message: (err as Error).message } }, 'could not record auth.failed'));
  }

  /** auth.failed for a JWT the gateway refused (the reason is a short code from a fixed set; anything else is `other`). */
  jwtRefused(reason: string, call: CallContext): Promise<void> {
    return this.authFailed(call, 'jwt', '', /^[a-z_]{1,40}$/.test(reason) ? reason : 'other');
  }

  /**
   * rate_limit.exceeded for a caller a gateway refused (the gateway reports once per subject and window). The
   * actor is the caller (an API key, a user, or anonymous for an ip).
   */
  async rateLimitExceeded(environment: string, report: RateLimitReport, call: CallContext): Promise<void> {
    const errors: { field: string; message: string }[] = [];
    if (!Object.hasOwn(SUBJECTS, report.subjectType)) errors.push({ field: 'subjectType', message: 'must be api_key, user or ip' });
    const idPrefix = SUBJECTS[report.subjectType as keyof typeof SUBJECTS];
    if (idPrefix ? !isId(idPrefix, report.subjectId) : report.subjectId !== '') {
      errors.push({ field: 'subjectId', message: idPrefix ? `must be a ${idPrefix}_ id` : 'must be empty for an ip' });
    }
    if (!Number.isInteger(report.limit) || report.limit < 1) errors.push({ field: 'limit', message: 'must be a positive integer' });
    if (!Number.isInteger(report.windowSeconds) || report.windowSeconds < 1) errors.push({ field: 'windowSeconds', message: 'must be a positive integer' });
    if (errors.length) throw AppError.invalid(errors);
    const subject = report.subjectType as keyof typeof SUBJECTS;
    await this.written.add(
      eventOfCall(call, {
        environment,
        type: 'rate_limit.exceeded',
        target: subject === 'ip' ? { id: callerOf(call).context.ip, type: 'ip' } : { id: report.subjectId, type: subject },
        result: 'failure',
        metadata: { limit: report.limit, windowSeconds: report.windowSeconds, subject },
      }),
    );
  }
}
