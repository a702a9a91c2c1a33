import { rowFromEvent, type LogRow } from '../../src/rows';

let n = 0;

/** A stored user.login row with a London location; the nth row is 1 ms after the one before (ids log_<n>). */
export function sampleRow(over: Partial<LogRow> = {}): LogRow {
  n++;
  const base = rowFromEvent(
    {
      id: `log_${String(n).padStart(6, '0')}`,
      environment: 'live',
      type: 'user.login',
      timestamp: new Date(Date.UTC(2026, 10, 1, 12, 0, 0, n)).toISOString(),
      actor: { id: 'user_1', email: 'alice@example.com', type: 'user' },
      target: { id: 'ses_1', type: 'session' },
      context: { ip: '81.2.69.142', userAgent: 'jest' },
      result: 'success',
      traceId: 'req_1',
      metadataJson: '{"authMethod":"password","mfaUsed":false}',
    },
    { city: 'London', country: 'GB', region: 'England', lat: 51.5, lng: -0.12 },
  );
  return { ...base, ...over };
}
