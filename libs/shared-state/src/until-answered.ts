import { isRedisUnavailable } from './redis-options.js';

/** How often the undos are sent again while Redis does not answer. */
const RETRY_MS = 200;
/** The most undos kept (a long outage of many callers); any beyond are left to their keys' expiry. */
const MAX = 10_000;

/**
 * Undoes of what a caller gave up on while Redis did not answer, each sent at once and again
 * every {@link RETRY_MS} until Redis answers it: a request that got no answer may still take what it
 * asked for (the client sends a command that timed out once more when it reconnects, and a stalled
 * Redis runs what it read late), and a release that got no answer left what it was to free. An
 * answered undo was sent after the request on the connection that carried it, or on a reconnect
 * after what the client re-sends: it runs after the request, so it frees whatever that took. An
 * undo must be harmless when there is nothing to undo (a compare-and-delete, a ZREM). One
 * answered with a reply error other than an outage is dropped: sending it again would not change it.
 */
export class UntilAnswered {
  private readonly pending = new Map<string, () => Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;

  /** Sends `undo` now, then again until Redis answers it; `id` names what it undoes. */
  add(id: string, undo: () => Promise<unknown>): void {
    if (this.pending.size >= MAX) this.pending.delete(this.pending.keys().next().value as string);
    this.pending.set(id, undo);
    void this.send(id, undo);
    this.timer ??= setTimeout(() => void this.round(), RETRY_MS).unref();
  }

  /** How many undos wait for an answer. */
  get size(): number {
    return this.pending.size;
  }

  /**
   * Sends every waiting undo once now (a caller about to count what they hold sends them first on
   * the same connection, so they run before its count); the timer's rounds go on as before.
   */
  sendNow(): void {
    for (const [id, undo] of this.pending) void this.send(id, undo);
  }

  private send(id: string, undo: () => Promise<unknown>): Promise<void> {
    return undo().then(
      () => void this.forget(id, undo),
      (err: unknown) => void (isRedisUnavailable(err) ? undefined : this.forget(id, undo)),
    );
  }

  /** Drops `id` unless it was replaced meanwhile by a newer undo. */
  private forget(id: string, undo: () => Promise<unknown>): void {
    if (this.pending.get(id) === undo) this.pending.delete(id);
  }

  /** One round of undos; those without an answer wait for the next round. */
  private async round(): Promise<void> {
    await Promise.all([...this.pending].map(([id, undo]) => this.send(id, undo)));
    this.timer = this.pending.size > 0 ? setTimeout(() => void this.round(), RETRY_MS).unref() : undefined;
  }
}
