import type { Logger } from '@mcpx/log';
import type { Discovery, DiscoveryTarget } from './discovery.js';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';

/** Servers of one kind that may be due for a re-probe: the mcp_servers rows, or built-ins. */
export interface ReprobeSource {
  /** Servers whose next probe is due, oldest due first. */
  dueForProbe(now: Date, limit: number): Promise<Array<{ accountId: string; name: string }>>;
  /**
   * Servers saved before `savedBefore` whose save no discovery has recorded since (the registry
   * that ran it lost its record and stopped), longest owed first. Absent: the source owes none.
   */
  owedDiscoveries?(savedBefore: Date, limit: number): Promise<Array<{ accountId: string; name: string }>>;
  find(account: string, name: string): Promise<McpServerRecord | null>;
  /** Where their discoveries record (absent: the mcp_servers rows). */
  readonly target?: DiscoveryTarget;
}

/**
 * Probes servers in `error` (and built-ins still `unknown`) again when their backoff is due, so
 * recovery is noticed without anyone pressing refresh; lists in use are listed again when they
 * expire (see Discovery's re-list). Every instance runs one; the discovery
 * lock keeps a server from being probed twice at once. It also discovers, whatever their state,
 * the servers whose save was never discovered once `owedAfterMs` has passed since it (longer
 * than a save's own discovery takes): the discovery a registry owed and did not run before it
 * stopped is run by whichever registry looks next.
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
    private readonly opts: { intervalMs: number; batch: number; concurrency: number; owedAfterMs: number },
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
      const savedBefore = new Date(now.getTime() - this.opts.owedAfterMs);
      const due = (
        await Promise.all(
          this.sources.map(async (source) => {
            const owed = (await source.owedDiscoveries?.(savedBefore, this.opts.batch)) ?? [];
            const owedKeys = new Set(owed.map((item) => `${item.accountId}:${item.name}`));
            const probes = (await source.dueForProbe(now, this.opts.batch)).filter(
              (item) => !owedKeys.has(`${item.accountId}:${item.name}`),
            );
            return [
              ...owed.map((item) => ({ ...item, source, owed: true })),
              ...probes.map((item) => ({ ...item, source, owed: false })),
            ];
          }),
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
          if (item.owed) await this.discoverOwed(server, item.source);
          else if (state === 'error' || state === 'unknown')
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

  /** A save's discovery that was lost, run now: a failure is its own (the other servers' re-probes go on). */
  private async discoverOwed(server: McpServerRecord, source: ReprobeSource): Promise<void> {
    this.log.info('a saved server whose discovery was lost is discovered', {
      account: server.accountId,
      server: server.name,
    });
    try {
      await this.discovery.discover(server, 'probe', source.target);
    } catch (err) {
      this.log.warn('a lost discovery could not be run again (tried on the next look)', {
        account: server.accountId,
        server: server.name,
        err: err as Error,
      });
    }
  }
}
