/** How many runs' instances a client remembers at most. */
export const MAX_STICKY_RUNS = 10_000;

/**
 * The proxy instance each run is stuck to (its pool lives there). The oldest run is forgotten past
 * {@link MAX_STICKY_RUNS} (runs that are never ended, e.g. a registry's InvokeTool for many users),
 * which costs that run one call through the queue group, never a failure.
 */
export class StickyRuns {
  readonly #runs = new Map<string, string>();

  get(run: string): string | undefined {
    return this.#runs.get(run);
  }

  /** Keeps (or refreshes) a run's instance, as the newest. */
  set(run: string, instance: string): void {
    this.#runs.delete(run);
    this.#runs.set(run, instance);
    if (this.#runs.size > MAX_STICKY_RUNS) {
      const oldest = this.#runs.keys().next();
      if (oldest.done !== true) this.#runs.delete(oldest.value);
    }
  }

  delete(run: string): void {
    this.#runs.delete(run);
  }
}
