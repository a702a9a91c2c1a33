import { PgChannelListener, type Logger } from '@secsvc/shared';

export const CREDENTIAL_CHANGE_CHANNEL = 'secsvc_credential_changes';

export type CredentialChangeListener = { onChange: (id: string) => void; onReset: () => void };

/**
 * Relays Postgres notifications of credential (API key, session, user) changes to subscribers (the gateways'
 * watch streams). When the LISTEN connection drops, every subscription is reset (their streams end, so
 * gateways stop trusting their caches), and it reconnects by itself; new subscribers wait until it is live.
 */
export class CredentialChangeFeed {
  private readonly listeners = new Set<CredentialChangeListener>();
  private readonly liveWaiters: (() => void)[] = [];
  private readonly channel: PgChannelListener;

  constructor(url: string, logger: Logger) {
    this.channel = new PgChannelListener(url, CREDENTIAL_CHANGE_CHANNEL, logger, {
      onNotify: (id) => {
        for (const l of this.listeners) l.onChange(id);
      },
      onLive: () => {
        for (const w of this.liveWaiters.splice(0)) w();
      },
      onLost: () => this.resetAll(),
    });
  }

  get live(): boolean {
    return this.channel.live;
  }

  start(): Promise<void> {
    return this.channel.start();
  }

  /** A reset ends every subscription: subscribers resubscribe once the feed is live again. */
  private resetAll(): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l.onReset();
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
    await this.channel.stop();
    this.resetAll();
  }
}
