import type { Tool } from '@modelcontextprotocol/client';

/** A tool list with the first page's 2026-07-28 cache hints (absent on legacy servers). */
export interface ToolsWithHints {
  tools: Tool[];
  ttlMs?: number;
  cacheScope?: 'public' | 'private';
}

/** A connection's current tool list (`McpConnection.currentTools`). */
export interface CurrentTools extends ToolsWithHints {
  /** When the listing was asked for (epoch ms): its age counts from there. */
  listedAt: number;
  /** True when an earlier listing still stood and no request was sent for this one. */
  reused: boolean;
}

interface Listing {
  result: ToolsWithHints;
  startedAt: number;
  /** The changes heard when it was asked for: one heard since makes it stale. */
  heard: number;
  /** The openings and ends of the notification stream when it was asked for: one since makes it stale too. */
  gaps: number;
}

/**
 * What one connection knows of its server's tool list: the last listing made on it (whoever asked:
 * the proxy's quiet discovery lists every connection it opens), the list changes heard since, and
 * the listing under way. Pure bookkeeping (the clock is passed in), so its rules are tested alone.
 */
export class ListedTools {
  #heard = 0;
  #gaps = 0;
  #last: Listing | undefined;
  #inflight: { promise: Promise<ToolsWithHints>; startedAt: number; heard: number } | undefined;

  /** A `notifications/tools/list_changed` (or its owner's word that the list changed): what was listed before is stale. */
  heard(): void {
    this.#heard++;
  }

  /**
   * The stream the server's notifications come on opened or ended: a change may have gone unheard
   * while none was open, so a listing asked for before is not reused. One under way is still
   * shared: it is as recent as the caller's own would be, and no change was heard.
   */
  streamChanged(): void {
    this.#gaps++;
  }

  /**
   * Runs `list` and keeps its result as the connection's last listing (unless a newer one is kept
   * already). `shared`: callers of {@link current} may wait for this listing instead of sending
   * their own (a listing bound to one caller's signal is not shared).
   */
  track(list: () => Promise<ToolsWithHints>, shared: boolean, now: number): Promise<ToolsWithHints> {
    const heard = this.#heard;
    const gaps = this.#gaps;
    const promise = list().then((result) => {
      if (this.#last === undefined || this.#last.startedAt <= now) this.#last = { result, startedAt: now, heard, gaps };
      return result;
    });
    if (shared) {
      const entry = { promise, startedAt: now, heard };
      this.#inflight = entry;
      const clear = (): void => {
        if (this.#inflight === entry) this.#inflight = undefined;
      };
      promise.then(clear, clear);
    }
    return promise;
  }

  /**
   * The last listing while it is fresh: no change heard since it was asked for, nor the stream of
   * changes opened or ended, and younger than `freshForMs(listing)`. Else the listing under way that started after the last change heard,
   * else a new one (`list`). Concurrent callers share one listing.
   */
  async current(
    freshForMs: (listed: ToolsWithHints) => number,
    list: () => Promise<ToolsWithHints>,
    now: number,
  ): Promise<CurrentTools> {
    const last = this.#last;
    if (
      last !== undefined &&
      last.heard === this.#heard &&
      last.gaps === this.#gaps &&
      now - last.startedAt < freshForMs(last.result)
    ) {
      return { ...last.result, listedAt: last.startedAt, reused: true };
    }
    const inflight = this.#inflight;
    if (inflight !== undefined && inflight.heard === this.#heard) {
      return { ...(await inflight.promise), listedAt: inflight.startedAt, reused: false };
    }
    return { ...(await this.track(list, true, now)), listedAt: now, reused: false };
  }
}
