/**
 * The shortest gap between two turns of the loop (but when a claim came back full: the next turn
 * follows at once). A poll's answer is written at the turn after it, with those that came in
 * meanwhile (one statement).
 */
export const TICK_MS = 100;
/**
 * The longest the loop sleeps without looking at the tasks (a claim and {@link TaskStore.nextDue}),
 * whatever it was told: the lease, at most 10 s. A task created on another instance that then dies
 * unheard of is seen before its lease (its first poll's interval and the lease) lapses, so it is
 * taken over on time even when no notice came (the tasks channel down).
 */
export const LOOK_MAX_MS = 10_000;
/** How often at most finished tasks past their ttl are purged (their results, then their rows), at a turn that claims. */
export const PURGE_MS = 30_000;
/** A turn that failed (Postgres away): the next one after this long. */
export const RETRY_MS = 1_000;

/**
 * When the poll loop's next turn runs (docs/tasks.md#the-broker): one timer (unref'd), set to the
 * earliest time asked for and never sooner than `minGapMs` after the last turn began.
 */
export class TurnTimer {
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (Infinity: none set). */
  private wakeAt = Infinity;
  private lastTurn = 0;

  constructor(
    private readonly minGapMs: number,
    private readonly turn: () => void,
  ) {}

  /** A turn begins now (by the timer or not): the next one is at least `minGapMs` away. */
  began(): void {
    this.lastTurn = Date.now();
  }

  /** The earliest a turn asked for at `at` may run. */
  when(at: number): number {
    return Math.max(at, this.lastTurn + this.minGapMs);
  }

  /** Sets the next turn at `at` (held to the gap), unless one is set sooner. */
  set(at: number): void {
    const when = this.when(at);
    if (when >= this.wakeAt) return;
    this.clear();
    this.wakeAt = when;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.wakeAt = Infinity;
        this.turn();
      },
      Math.max(0, when - Date.now()),
    );
    this.timer.unref();
  }

  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.wakeAt = Infinity;
  }
}
