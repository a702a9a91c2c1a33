import type { Pool, PoolClient } from '@secsvc/shared';
import { ACCOUNT_FAILURE_LIMIT, IP_FAILURE_LIMIT, type FailureCounts } from '../domain/login-throttle';

type Db = Pool | PoolClient;

/** The window failures are counted over (password logins, OAuth client authentication, second factors). */
export const LOGIN_WINDOW_SECONDS = 15 * 60;

/**
 * The failures of one account and of one ip in a failures table (`login_failures`, `mfa_failures`) within the
 * window, with the seconds until the oldest of the last `limit` leaves it (when the limit is reached, that is the
 * wait). `account` is the table's predicate naming the account with $1 (the environment) and $2; $3 is the ip.
 */
export async function failureCounts(db: Db, table: 'login_failures' | 'mfa_failures', account: string, params: [environment: string, key: string | null, ip: string]): Promise<FailureCounts> {
  const inWindow = 'failed_at > now() - make_interval(secs => $4)';
  const waitOf = (where: string, limit: number) =>
    `(SELECT ceil(extract(epoch FROM min(failed_at) + make_interval(secs => $4) - now()))::int FROM
        (SELECT failed_at FROM ${table} WHERE ${where} AND ${inWindow} ORDER BY failed_at DESC LIMIT ${limit}) recent)`;
  const { rows } = await db.query<FailureCounts>(
    `SELECT
       (SELECT count(*)::int FROM ${table} WHERE ${account} AND ${inWindow}) AS account,
       ${waitOf(account, ACCOUNT_FAILURE_LIMIT)} AS account_wait,
       (SELECT count(*)::int FROM ${table} WHERE ip = $3 AND ${inWindow}) AS by_ip,
       ${waitOf('ip = $3', IP_FAILURE_LIMIT)} AS ip_wait`,
    [...params, LOGIN_WINDOW_SECONDS],
  );
  return rows[0]!;
}
