import pg from 'pg';
import type { Logger } from '@secsvc/shared';

export const CREDENTIAL_CHANGE_CHANNEL = 'secsvc_credential_changes';

export type CredentialChangeListener = { onChange: (id: string) => void; onReset: () => void };

/**
 * Relays Postgres notifications of credential (API key, session) changes to subscribers (the gateways' watch streams). When the
 * LISTEN connection drops, every subscription is reset (their streams end, so gateways stop trusting their
 * caches), and the feed reconnects with backoff; new subscribers wait until it is live again.
 */
export class CredentialChangeFeed {
  private client: pg.Client | undefined;
  private listeners = new Set<CredentialChangeListener>();
  private stopped = false;
  private retryMs = 250;
  private liveWaiters: (() => void)[] = [];
  live = false;

  constructor(
    private readonly url: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(`LISTEN ${CREDENTIAL_CHANGE_CHANNEL}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      this.logger.warn({ err: { message: (err as Error).message } }, 'credential change feed: connect failed, retrying');
      this.scheduleReconnect();
      return;
    }
    this.client = client;
    this.live = true;
    this.retryMs = 250;
    client.on('notification', (n) => {
      if (n.channel !== CREDENTIAL_CHANGE_CHANNEL || !n.payload) return;
      for (const l of this.listeners) l.onChange(n.payload);
    });
    client.once('end', () => this.lost());
    client.once('error', () => this.lost());
    for (const w of this.liveWaiters.splice(0)) w();
  }

  private lost(): void {
    if (!this.live) return;
    this.live = false;
    this.client = undefined;
    // A reset ends every subscription: subscribers resubscribe once the feed is live again.
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l.onReset();
    if (!this.stopped) {
      this.logger.warn('credential change feed: connection lost, reconnecting');
      this.scheduleReconnect();
    }
  }

  private scheduleReconnect(): void {
    const timer = setTimeout(() => void this.connect(), this.retryMs);
    timer.unref();
    this.retryMs = Math.min(this.retryMs * 2, 10_000);
  }

  /** Resolves once the feed is live (immediately when it already is). */
  whenLive(): Promise<void> {
    return this.live ? Promise.resolve() : new Promise((resolve) => this.liveWaiters.push(resolve));
  }

  subscribe(listener: CredentialChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    for (const l of [...this.listeners]) l.onReset();
    this.listeners.clear();
    await this.client?.end().catch(() => undefined);
  }
}
