/**
 * The bytes of request bodies one process holds while they arrive, across every request: a body
 * takes its bytes as they come and gives them back when it is complete (or cut). Past the limit a
 * take is refused, so the bound holds however many bodies are in flight and however slowly each
 * one trickles in.
 */
export class BodyBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Bytes held now. */
  get buffered(): number {
    return this.used;
  }

  /** Whether any byte is left: a new body is refused at once when none is. */
  get full(): boolean {
    return this.used >= this.limit;
  }

  /** Takes `n` bytes; false (nothing taken) when that would pass the limit. */
  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used = Math.max(0, this.used - n);
  }
}
