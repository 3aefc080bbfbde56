import type { Logger } from '@mcpx/log';
import type { Discovery } from './discovery.js';
import type { McpServersRepository } from './repositories/mcp-servers.repository.js';

/**
 * Probes servers in `error` again when their backoff is due, so recovery is noticed without
 * anyone pressing refresh. Every instance runs one; the discovery lock keeps a server from being
 * probed twice at once.
 */
export class Reprober {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private current: Promise<number> = Promise.resolve(0);

  constructor(
    private readonly servers: McpServersRepository,
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

  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves when the tick in progress (if any) has finished; for a clean shutdown. */
  async idle(): Promise<void> {
    await this.current.catch(() => 0);
  }

  async tick(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    try {
      const due = await this.servers.dueForProbe(new Date(), this.opts.batch);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < due.length) {
          const item = due[next++];
          if (item === undefined) return;
          const server = await this.servers.find(item.accountId, item.name);
          if (server !== null && server.status.state === 'error') await this.discovery.discover(server, 'probe');
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
