import pg from 'pg';
import type { Logger } from '@secsvc/shared';

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
 * One dedicated Postgres connection LISTENing on `secsvc_policy_changes` (payload: the environment). When the
 * connection drops, `live` turns false and the feed reconnects with backoff (250 ms doubling to 10 s); the
 * listener is told when it is live again. While it is not live, nothing is announced: callers must not trust
 * what they loaded (the decision store reloads on every request then).
 */
export class PolicyChangeFeed {
  private client: pg.Client | undefined;
  private stopped = false;
  private retryMs = 250;
  private timer: NodeJS.Timeout | undefined;
  live = false;
  /** How many times the LISTEN connection has been established (1 after a clean start). */
  connections = 0;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
    private readonly listener: PolicyChangeListener,
  ) {}

  /** Connects once; on failure keeps retrying in the background (start resolves either way). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    this.timer = undefined;
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(`LISTEN ${POLICY_CHANGE_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      this.logger.warn({ err: { message: (err as Error).message } }, 'policy change feed: connect failed, retrying');
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    client.on('notification', (n) => {
      if (n.channel === POLICY_CHANGE_CHANNEL && n.payload) this.listener.onChange(n.payload);
    });
    client.once('end', () => this.lost(client));
    client.once('error', () => this.lost(client));
    this.live = true;
    this.connections++;
    this.retryMs = 250;
    this.listener.onLive();
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.live = false;
    if (this.stopped) return;
    this.logger.warn('policy change feed: connection lost, reloading policies on every decision until it is back');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.connect(), this.retryMs);
    this.timer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}
