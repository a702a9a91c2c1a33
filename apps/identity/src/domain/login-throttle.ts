// Throttling of password logins and of OAuth client authentication: failures are counted per account (or
// client) and per ip over a 15-minute window (passwordsRepository.failures).

export const ACCOUNT_FAILURE_LIMIT = 5;
export const IP_FAILURE_LIMIT = 20;

/** Failures in the window, and the seconds until the oldest counted one leaves it (null when none). */
export interface FailureCounts {
  account: number;
  account_wait: number | null;
  by_ip: number;
  ip_wait: number | null;
}

/**
 * The seconds to wait (at least 1) when the failures have reached a limit, or, with `beyond`, gone past it (a
 * check made after counting the failure at hand); undefined when neither limit applies.
 */
export function throttleWait(f: FailureCounts, beyond = false): number | undefined {
  const over = (n: number, limit: number) => (beyond ? n > limit : n >= limit);
  const account = over(f.account, ACCOUNT_FAILURE_LIMIT);
  const ip = over(f.by_ip, IP_FAILURE_LIMIT);
  if (!account && !ip) return undefined;
  return Math.max(1, account ? (f.account_wait ?? 1) : 0, ip ? (f.ip_wait ?? 1) : 0);
}
