import { Backoff } from './backoff';
import pg from 'pg';
import type { Logger } from './logger';

export interface ChannelHandlers {
  /** A notification's payload. */
  onNotify: (payload: string) => void;
  /** The LISTEN connection is (again) up: what was not announced while it was down is unknown. */
  onLive?: () => void;
  /** The connection dropped; it reconnects by itself. */
  onLost?: () => void;
}

/**
 * One dedicated Postgres connection LISTENing on a channel, reconnecting with backoff (250 ms doubling to
 * 10 s, with jitter) when it drops. `live` says whether notifications are being received right now.
 */
export class PgChannelListener {
  private client: pg.Client | undefined;
  private stopped = false;
  private readonly backoff = new Backoff({ baseMs: 250, maxMs: 10_000 });
  private timer: NodeJS.Timeout | undefined;
  live = false;
  /** How many times the LISTEN connection has been established (1 after a clean start). */
  connections = 0;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly logger: Logger,
    private readonly handlers: ChannelHandlers,
  ) {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
  }

  /** Connects once; on failure keeps retrying in the background (resolves either way). */
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
      await client.query(`LISTEN ${this.channel}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      this.logger.warn({ err: { message: (err as Error).message }, channel: this.channel }, 'LISTEN connection failed, retrying');
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    client.on('notification', (n) => {
      if (n.channel === this.channel && n.payload) this.handlers.onNotify(n.payload);
    });
    client.once('end', () => this.lost(client));
    client.once('error', () => this.lost(client));
    this.live = true;
    this.connections++;
    this.backoff.reset();
    this.handlers.onLive?.();
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.live = false;
    this.handlers.onLost?.();
    if (this.stopped) return;
    this.logger.warn({ channel: this.channel }, 'LISTEN connection lost, reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.connect(), this.backoff.next());
    this.timer.unref();
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
