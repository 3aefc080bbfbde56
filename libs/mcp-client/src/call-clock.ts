/**
 * A call's own clock: its timeout (restarted on progress when asked) and the caller's signal, as
 * one signal for the request, and which of the two ended it (`why`).
 */
export class CallClock {
  why: 'timeout' | 'cancelled' | undefined;
  readonly #controller = new AbortController();
  readonly #timeoutMs: number;
  readonly #outer: AbortSignal | undefined;
  #timer: NodeJS.Timeout;
  readonly #onTimeout = (): void => {
    this.why = 'timeout';
    this.#controller.abort();
  };
  readonly #onAbort = (): void => {
    this.why ??= 'cancelled';
    this.#controller.abort();
  };

  constructor(timeoutMs: number, outer: AbortSignal | undefined) {
    this.#timeoutMs = timeoutMs;
    this.#outer = outer;
    this.#timer = setTimeout(this.#onTimeout, timeoutMs);
    if (outer?.aborted) this.#onAbort();
    else outer?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Starts the timeout again (progress was heard), unless the call has already ended. */
  restart(): void {
    if (this.why !== undefined) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(this.#onTimeout, this.#timeoutMs);
  }

  dispose(): void {
    clearTimeout(this.#timer);
    this.#outer?.removeEventListener('abort', this.#onAbort);
  }
}
