/**
 * A call's own clock: its timeout (restarted on progress when asked) and the caller's signal, as
 * one signal for the request, and which of the two ended it (`why`).
 *
 * A caller that hands its own controller (`own`) has it made the call's: its abort cancels the
 * call and the timeout aborts it, with no second controller linked to a caller's signal (two
 * objects and a listener less a call).
 */
export class CallClock {
  #why: 'timeout' | 'cancelled' | undefined;
  readonly #controller: AbortController;
  readonly #timeoutMs: number;
  readonly #outer: AbortSignal | undefined;
  #timer: NodeJS.Timeout;
  readonly #onTimeout = (): void => {
    // A call its caller ended first stays cancelled.
    if (this.#controller.signal.aborted) return;
    this.#why = 'timeout';
    this.#controller.abort();
  };
  readonly #onAbort = (): void => {
    this.#why ??= 'cancelled';
    this.#controller.abort();
  };

  constructor(timeoutMs: number, outer: AbortSignal | undefined, own?: AbortController) {
    this.#timeoutMs = timeoutMs;
    this.#controller = own ?? new AbortController();
    this.#outer = own === undefined ? outer : undefined;
    this.#timer = setTimeout(this.#onTimeout, timeoutMs);
    if (this.#outer?.aborted) this.#onAbort();
    else this.#outer?.addEventListener('abort', this.#onAbort, { once: true });
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** What ended the call: its timeout, or its caller (the caller's signal, or its own controller aborted). */
  get why(): 'timeout' | 'cancelled' | undefined {
    return this.#why ?? (this.#controller.signal.aborted ? 'cancelled' : undefined);
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
