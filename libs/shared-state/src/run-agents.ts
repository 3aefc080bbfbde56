import type { Redis } from 'ioredis';

/** How long a run's agents are remembered after its last call through the registry. */
export const RUN_AGENTS_TTL_MS = 24 * 60 * 60_000;

/**
 * The agents whose calls a run carried (InvokeTool with a named run), kept in Redis per account
 * and run: what an AGENT signer's `EndRun` is checked against, so that it ends only runs of the
 * agents it is bound to. Shared by every registry instance; a run it never saw has no agents.
 */
export class RunAgents {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlMs: number = RUN_AGENTS_TTL_MS,
  ) {}

  /** Records that `agent` called in `run` (the memory of the run lasts `ttlMs` from now). */
  async record(account: string, run: string, agent: string): Promise<void> {
    const key = this.key(account, run);
    await this.redis.multi().sadd(key, agent).pexpire(key, this.ttlMs).exec();
  }

  /** The agents that called in `run` (empty: none through the registry, or long ago). */
  agents(account: string, run: string): Promise<string[]> {
    return this.redis.smembers(this.key(account, run));
  }

  /** Forgets an ended run. */
  async forget(account: string, run: string): Promise<void> {
    await this.redis.del(this.key(account, run));
  }

  private key(account: string, run: string): string {
    return `${this.prefix}run-agents:${account}:${run}`;
  }
}
