/** How long after a notice the next of the same key waits: at most about 4 of a key per second pass. */
export const COALESCE_MS = 250;

/**
 * Bounds a flood of a server's notices (10,000 updates a second of one resource): the first of a
 * key passes at once, the rest within the window are counted and pass as one at its end (with
 * their count), so a listener hears at most one notice per key per window and never misses the
 * last change. One timer per key with a pending window; `close` drops them all.
 */
export class NoticeCoalescer<K, V> {
  private readonly windows = new Map<K, { pending: number; value: V; timer: NodeJS.Timeout }>();

  constructor(
    private readonly emit: (value: V, count: number) => void,
    private readonly windowMs = COALESCE_MS,
  ) {}

  /** A notice of `key`: passed now, or counted into the open window. Returns whether it passed now. */
  push(key: K, value: V): boolean {
    const open = this.windows.get(key);
    if (open !== undefined) {
      open.pending++;
      return false;
    }
    this.emit(value, 1);
    this.open(key, value);
    return true;
  }

  private open(key: K, value: V): void {
    const w = {
      pending: 0,
      value,
      timer: setTimeout(() => {
        this.windows.delete(key);
        if (w.pending === 0) return;
        this.emit(value, w.pending);
        this.open(key, value);
      }, this.windowMs),
    };
    w.timer.unref();
    this.windows.set(key, w);
  }

  /**
   * Ends a key's window (its subscription ended, or its connection was lost under it): what it
   * counted passes now, so the last change is never lost with the subscription.
   */
  forget(key: K): void {
    const w = this.windows.get(key);
    if (w === undefined) return;
    clearTimeout(w.timer);
    this.windows.delete(key);
    if (w.pending > 0) this.emit(w.value, w.pending);
  }

  close(): void {
    for (const w of this.windows.values()) clearTimeout(w.timer);
    this.windows.clear();
  }
}
