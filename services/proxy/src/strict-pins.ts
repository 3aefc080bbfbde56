import type { Counter, Meter } from '@opentelemetry/api';
import { ErrorCodes, WireError } from '@mcpx/contracts';
import { contractCid, documentContractCid, type McpToolDocument } from '@mcpx/domain';
import { McpClientError, type McpConnection, type Tool } from '@mcpx/mcp-client';

/**
 * The longest a connection's listing stands for a strict server's calls, whatever the server says:
 * a modern list's `ttlMs` above it is held to it, and a legacy server that announces its list
 * changes is trusted this long between them.
 */
export const STRICT_LISTING_MAX_AGE_MS = 30_000;
/** A strict server's changed tool is reported at most this often per server (the registry lists a pinned server itself at most once per 30 s). */
const REPORT_EVERY_MS = 30_000;
/** How long a strict call waits for its connection's listing (within the call's own timeout). */
const LISTING_TIMEOUT_MS = 30_000;
/** Servers whose last report is remembered (the oldest goes first). */
const REMEMBERED = 10_000;

/** What a strict check found: the listing's CID is the accepted one, or not, or the server no longer lists the tool. */
type Outcome = 'match' | 'mismatch' | 'unlisted' | 'unverified';

/**
 * Strict pinning on the call path. A `strict` server's calls go out only while the server lists
 * the contract a person accepted: before each call, the contract the server lists on the call's
 * own connection (its current listing: see `McpConnection.currentTools`) is compared by CID with
 * the one the call's document carries. A mismatch refuses the call with `held_for_review` (nothing
 * is sent) and tells the connection its list changed, so the proxy's quiet discovery reports it
 * and the registry holds the change for review. A listing that cannot be had refuses the call too
 * (fail closed).
 *
 * Other modes pay nothing: the mode is part of the server's catalog entry (`ServerCredentials.pin`, read
 * with its credentials from the same row), and only `strict` lists anything.
 */
export class StrictPins {
  private readonly reported = new Map<string, number>();
  /** CIDs computed once per document and per listed tool object (both are kept while in use). */
  private readonly acceptedCid = memoByObject<McpToolDocument>(documentContractCid);
  private readonly listedCid = memoByObject<Tool>(contractCid);
  private readonly checks: Counter;

  constructor(meter: Meter) {
    this.checks = meter.createCounter('mcpx_proxy_strict_checks_total', {
      description:
        "Strict-pinned servers' calls checked against the contract their connection lists, by outcome (match, mismatch, unlisted, unverified) and listing (reused, listed)",
    });
  }

  /**
   * Resolves when the tool of `doc` is listed on `conn` with the contract `doc` carries; else
   * throws: `held_for_review` (the server lists another contract: `details.cid` is it),
   * `not_found` (the server no longer lists the tool), `transport_error` with `reason:
   * contract_unverified` (no listing could be had: nothing was called, the call may be sent
   * again). An `unauthorized` or `session_expired` listing is thrown as the client's error, so the
   * call's one retry (a token refreshed, a session renewed) applies to it as to the call.
   */
  async verify(conn: McpConnection, account: string, doc: McpToolDocument, timeoutMs: number): Promise<void> {
    let listing;
    try {
      listing = await conn.currentTools({
        maxAgeMs: STRICT_LISTING_MAX_AGE_MS,
        timeoutMs: Math.min(timeoutMs, LISTING_TIMEOUT_MS),
      });
    } catch (err) {
      this.count('unverified', 'listed');
      if (
        err instanceof McpClientError &&
        (err.code === 'unauthorized' || err.code === 'session_expired' || err.code === 'cancelled')
      )
        throw err;
      const why = err instanceof Error ? err.message : 'the listing failed';
      throw new WireError(
        ErrorCodes.transportError,
        `the ${doc.server} MCP server is strictly pinned and its tool list could not be read to check ${doc.name}'s contract before the call (${why}); nothing was called`,
        { server: doc.server, tool: doc.name, reason: 'contract_unverified' },
      );
    }
    const how = listing.reused ? 'reused' : 'listed';
    const tool = listing.tools.find((t) => t.name === doc.remoteName);
    if (tool === undefined) {
      this.count('unlisted', how);
      this.report(account, doc.server, conn);
      throw new WireError(
        ErrorCodes.notFound,
        `the ${doc.server} MCP server no longer lists ${doc.remoteName}; nothing was called`,
        { field: 'tool', server: doc.server, tool: doc.name },
      );
    }
    const now = this.listedCid(tool);
    if (now === this.acceptedCid(doc)) {
      this.count('match', how);
      return;
    }
    this.count('mismatch', how);
    this.report(account, doc.server, conn);
    throw new WireError(
      ErrorCodes.heldForReview,
      `${doc.name} is held for review: the strictly pinned ${doc.server} MCP server now lists a contract for it that no person has accepted (ListToolChanges); nothing was called`,
      { server: doc.server, tool: doc.name, cid: now },
    );
  }

  /** The connection's list changed under the registry: quiet discovery reports it (at most once per server per {@link REPORT_EVERY_MS}). */
  private report(account: string, server: string, conn: McpConnection): void {
    const key = `${account}:${server}`;
    const last = this.reported.get(key);
    if (last !== undefined && Date.now() - last < REPORT_EVERY_MS) return;
    this.reported.delete(key);
    remember(this.reported, key, Date.now());
    conn.markToolsChanged();
  }

  private count(outcome: Outcome, listing: 'reused' | 'listed'): void {
    this.checks.add(1, { outcome, listing });
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > REMEMBERED) map.delete(map.keys().next().value as string);
}

/** `fn` remembered per argument object (forgotten with it). */
function memoByObject<K extends object>(fn: (key: K) => string): (key: K) => string {
  const seen = new WeakMap<K, string>();
  return (key) => {
    let value = seen.get(key);
    if (value === undefined) {
      value = fn(key);
      seen.set(key, value);
    }
    return value;
  };
}
