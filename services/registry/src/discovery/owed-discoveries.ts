import { isPostgresUnavailable } from '@mcpx/db';
import { isRedisUnavailable } from '@mcpx/shared-state';
import type { McpServerRecord } from '../catalog/mcp-servers.repository.js';
import { nextProbeDelayMs } from './discovery-schedule.js';
import { unrecordedStatus } from './discovery-status.js';
import type { DiscoveryDeps, DiscoveryTarget } from './discovery-types.js';

/**
 * Discoveries of saved servers whose record Postgres refused (SetMcpServer's, after its write).
 * Nothing of such a discovery could be stored, not even a re-probe, so the instance that ran it
 * runs it again itself, on the re-probe backoff, until one records (any recorded discovery of the
 * server settles it), the server is gone or `maxFailures` runs failed. Armed only where a record
 * failed, never with a write: the background re-prober's rows and rule stay as they were, and
 * nothing extra joins the discoveries a write starts. Kept in memory; what an instance that stops
 * first leaves is found in the row itself (the save marked it owed, `discovery_owed_at`) by the
 * next re-prober that looks (`reprober.ts`).
 */
export class OwedDiscoveries {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  /**
   * `rows`: where the server is read again (null: gone); `discover`: its discovery to its record
   * (throws when it did not record); `maxFailures`: the re-prober's `reprobeMaxFailures` (0: never
   * given up); `reprobeBaseMs`: the re-probe backoff's base.
   */
  constructor(
    private readonly rows: Pick<DiscoveryTarget, 'find'>,
    private readonly discover: (server: McpServerRecord) => Promise<unknown>,
    private readonly deps: Pick<DiscoveryDeps, 'log' | 'reprobeBaseMs'>,
    private readonly maxFailures: number,
  ) {}

  /**
   * A set's discovery of `server` (saved) that failed with `err` at its record: answered as a
   * failed discovery, and owed. Any other failure is thrown on.
   */
  unrecorded(server: McpServerRecord, err: unknown): McpServerRecord {
    if (!isPostgresUnavailable(err)) throw err;
    this.deps.log.warn("a saved server's discovery was not recorded: postgres is unavailable", {
      account: server.accountId,
      server: server.name,
    });
    this.owe(server.accountId, server.name, 1);
    return { ...server, status: unrecordedStatus(server, new Date()) };
  }

  /** A discovery of the server recorded: whatever was owed for it is settled. */
  settled(account: string, name: string): void {
    const key = `${account}:${name}`;
    clearTimeout(this.timers.get(key));
    this.timers.delete(key);
  }

  /** Forgets every owed discovery and waits for those under way (shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.all([...this.running]);
  }

  /** Runs the discovery of `name` again after the backoff of its `attempt`-th failure. */
  private owe(account: string, name: string, attempt: number): void {
    if (this.stopped) return;
    const max = this.maxFailures;
    if (max > 0 && attempt > max) {
      this.deps.log.error('an unrecorded discovery was given up: postgres stayed unavailable', {
        account,
        server: name,
        attempts: attempt - 1,
      });
      return;
    }
    const key = `${account}:${name}`;
    clearTimeout(this.timers.get(key));
    const timer = setTimeout(
      () => {
        this.timers.delete(key);
        const run = this.pay(account, name, attempt).finally(() => this.running.delete(run));
        this.running.add(run);
      },
      nextProbeDelayMs(attempt, Math.random, this.deps.reprobeBaseMs),
    );
    timer.unref();
    this.timers.set(key, timer);
  }

  private async pay(account: string, name: string, attempt: number): Promise<void> {
    try {
      const server = await this.rows.find(account, name);
      if (server !== null) await this.discover(server);
    } catch (err) {
      // A store still out: again later. Anything else is no outage to wait out.
      if (isPostgresUnavailable(err) || isRedisUnavailable(err)) this.owe(account, name, attempt + 1);
      else
        this.deps.log.error('an unrecorded discovery failed when run again', {
          account,
          server: name,
          err: err as Error,
        });
    }
  }
}
