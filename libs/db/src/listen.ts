import pg from 'pg';

/** What a channel listener tells its owner: each notice's payload, and when it (again) listens. */
export interface ChannelListenerOptions {
  /** A notice on the channel (its payload, `''` without one). */
  onNotice: (payload: string) => void;
  /**
   * The channel is listened to, the first time or again after a loss: notices sent meanwhile were
   * lost, so the owner reads what it waits for again.
   */
  onListening?: () => void;
  /** The connection failed or was lost (it is opened again, backing off to 30 s). */
  onLost?: (err: Error | undefined) => void;
  /** `application_name` of the connection (pg_stat_activity). */
  applicationName?: string;
}

export interface ChannelListener {
  /** Whether the channel is listened to now (a notice sent now reaches `onNotice`). */
  readonly listening: boolean;
  stop(): Promise<void>;
}

const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;
const CHANNEL_RE = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * `LISTEN channel` on a connection of its own (outside the pool: a listening connection is held
 * for good), opened again when it drops, backing off from 1 s to 30 s. A notice is a hint only:
 * one sent while the connection was down is lost, which `onListening` lets the owner make good.
 */
export function listenChannel(url: string, channel: string, opts: ChannelListenerOptions): ChannelListener {
  if (!CHANNEL_RE.test(channel)) throw new Error(`not a channel name: ${channel}`);
  let client: pg.Client | undefined;
  let listening = false;
  let stopped = false;
  let retryMs = RETRY_MIN_MS;
  let timer: NodeJS.Timeout | undefined;

  const retry = (): void => {
    if (stopped || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      void open();
    }, retryMs);
    timer.unref();
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  };

  const open = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url, application_name: opts.applicationName ?? 'listen' });
    let gone = false;
    const lost = (err?: Error): void => {
      if (gone) return;
      gone = true;
      if (client === c) client = undefined;
      listening = false;
      c.end().catch(() => undefined);
      if (stopped) return;
      opts.onLost?.(err);
      retry();
    };
    client = c;
    c.on('error', lost);
    c.on('end', () => lost(undefined));
    c.on('notification', (n) => {
      if (n.channel === channel) opts.onNotice(n.payload ?? '');
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
    } catch (err) {
      lost(err as Error);
      return;
    }
    if (stopped) {
      await c.end().catch(() => undefined);
      return;
    }
    listening = true;
    retryMs = RETRY_MIN_MS;
    opts.onListening?.();
  };

  void open();
  return {
    get listening() {
      return listening;
    },
    stop: async () => {
      stopped = true;
      listening = false;
      if (timer !== undefined) clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}
