import type { Logger } from '@mcpx/log';
import type { Discovery, DiscoveryTarget } from './discovery.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';

/** Servers of one kind that may be due for a re-probe: the mcp_servers rows, or built-ins. */
export interface ReprobeSource {
  /** Servers whose next probe is due, oldest due first. */
  dueForProbe(now: Date, limit: number): Promise<Array<{ accountId: string; name: string }>>;
  find(account: string, name: string): Promise<McpServerRecord | null>;
  /** Where their discoveries record (absent: the mcp_servers rows). */
  readonly target?: DiscoveryTarget;
}

/**
 * Probes servers in `error` (and built-ins still `unknown`) again when their backoff is due, so
 * recovery is noticed without anyone pressing refresh; lists in use are listed again when they
 * expire (see Discovery's re-list). Every instance runs one; the discovery
 * lock keeps a server from being probed twice at once.
 */
export class Reprober {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private current: Promise<number> = Promise.resolve(0);
  private closingStreams: Promise<void> = Promise.resolve();

  constructor(
    private readonly sources: ReprobeSource[],
    private readonly discovery: Discovery,
    private readonly log: Logger,
    private readonly opts: { intervalMs: number; batch: number; concurrency: number },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.current = this.tick();
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  /** Stops the ticks, and with them discovery's background work (its change streams, the discoveries it owes). */
  stop(): void {
    clearInterval(this.timer);
    this.closingStreams = this.discovery.stop();
  }

  /** Resolves when the tick in progress (if any) has finished and the change streams are closed; for a clean shutdown. */
  async idle(): Promise<void> {
    await this.current.catch(() => 0);
    await this.closingStreams.catch(() => undefined);
  }

  async tick(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      const now = new Date();
      const due = (
        await Promise.all(
          this.sources.map(async (source) =>
            (await source.dueForProbe(now, this.opts.batch)).map((item) => ({ ...item, source })),
          ),
        )
      ).flat();
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < due.length) {
          const item = due[next++];
          if (item === undefined) return;
          const server = await item.source.find(item.accountId, item.name);
          if (server === null) continue;
          const state = server.status.state;
          if (state === 'error' || state === 'unknown')
            await this.discovery.discover(server, 'probe', item.source.target);
          // A list in use that expired (the server's ttlMs): listed again, then disarmed until the next use.
          else if (state === 'ok' && server.status.listTtlMs !== undefined)
            await this.discovery.discover(server, 'expired', item.source.target);
        }
      };
      await Promise.all(Array.from({ length: this.opts.concurrency }, worker));
      return due.length;
    } catch (err) {
      this.log.error('re-probe failed', { err: err as Error });
      return 0;
    } finally {
      this.running = false;
    }
  }
}
