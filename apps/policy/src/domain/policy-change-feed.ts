import { PgChannelListener, type Logger } from '@secsvc/shared';

export const POLICY_CHANGE_CHANNEL = 'secsvc_policy_changes';

export interface PolicyChangeListener {
  /** A committed change to the policies of `environment` (the trigger's payload). */
  onChange: (environment: string) => void;
  /**
   * The LISTEN connection is (again) up. Changes made while it was down were not announced, so everything
   * loaded before must be treated as stale.
   */
  onLive: () => void;
}

/**
 * The dedicated LISTEN connection on `secsvc_policy_changes` (payload: the environment). While it is not
 * live nothing is announced: callers must not trust what they loaded (the decision store reloads on every
 * request then).
 */
export class PolicyChangeFeed extends PgChannelListener {
  constructor(url: string, logger: Logger, listener: PolicyChangeListener) {
    super(url, POLICY_CHANGE_CHANNEL, logger, { onNotify: listener.onChange, onLive: listener.onLive });
  }
}
