/**
 * The bytes of request bodies one process holds while they arrive, across every request: a body
 * takes its bytes as they come and gives them back when it is complete (or cut). Past the limit a
 * take is refused, so the bound holds however many bodies are in flight and however slowly each
 * one trickles in. One peer address may hold at most `perAddress` of it, so that a single
 * address cannot spend what every other client needs (takes without an address, a trusted
 * proxy's, count against the whole only).
 */
export class BodyBudget {
  private used = 0;
  private readonly held = new Map<string, number>();

  constructor(
    readonly limit: number,
    readonly perAddress: number = limit,
  ) {}

  /** Bytes held now. */
  get buffered(): number {
    return this.used;
  }

  /** Whether nothing is left (for `address`: of its share either): a new body is refused at once then. */
  full(address?: string): boolean {
    return this.used >= this.limit || (address !== undefined && (this.held.get(address) ?? 0) >= this.perAddress);
  }

  /** Takes `n` bytes for `address`; false (nothing taken) when that would pass the limit or its share. */
  take(n: number, address?: string): boolean {
    if (this.used + n > this.limit) return false;
    if (address !== undefined) {
      const held = (this.held.get(address) ?? 0) + n;
      if (held > this.perAddress) return false;
      this.held.set(address, held);
    }
    this.used += n;
    return true;
  }

  give(n: number, address?: string): void {
    this.used = Math.max(0, this.used - n);
    if (address === undefined) return;
    const left = (this.held.get(address) ?? 0) - n;
    if (left > 0) this.held.set(address, left);
    else this.held.delete(address);
  }
}
