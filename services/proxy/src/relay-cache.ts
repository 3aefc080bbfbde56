import { createHash } from 'node:crypto';
import type { ServerCredentials } from '@mcpx/stored';

// The relayed results a proxy keeps (relay-requests.ts): by the server's `ttlMs`, per account, server
// and the credentials it is reached with, bounded in entries and bytes.
/** A relayed result is kept at most this long, whatever `ttlMs` the server gives. */
export const RELAY_CACHE_MAX_TTL_MS = 300_000;
/** Results kept at most, and their JSON bytes together. */
const CACHE_MAX_ENTRIES = 2_000;
const CACHE_MAX_BYTES = 32 * 1024 * 1024;
/** A result bigger than this is never cached (it is still relayed, bounded). */
const CACHE_MAX_RESULT_BYTES = 256 * 1024;
const digests = new WeakMap<ServerCredentials, string>();

/**
 * A digest of what a server is reached with (URL, transport, headers with their secrets): part of
 * a cached result's key, so a result read with other credentials is never served once the catalog
 * reads the new ones. Kept per reading (the catalog keeps one until the server's event).
 */
export function credentialsDigest(server: ServerCredentials): string {
  let d = digests.get(server);
  if (d === undefined) {
    const headers = Object.entries(server.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    d = createHash('sha256')
      .update(JSON.stringify([server.url, server.transport ?? '', headers]))
      .digest('base64url')
      .slice(0, 22);
    digests.set(server, d);
  }
  return d;
}

/** Results kept by the server's `ttlMs`, per auth context (account and server: the credentials used). */
export class RelayCache {
  private readonly entries = new Map<string, { until: number; result: Record<string, unknown>; bytes: number }>();
  private bytes = 0;

  get(key: string, now = Date.now()): Record<string, unknown> | undefined {
    const hit = this.entries.get(key);
    if (hit === undefined) return undefined;
    if (hit.until > now) return hit.result;
    this.drop(key);
    return undefined;
  }

  /** Keeps `result` when it says how long it may be kept (`ttlMs` > 0), at most {@link RELAY_CACHE_MAX_TTL_MS}. */
  put(key: string, result: Record<string, unknown>, now = Date.now()): void {
    const ttl = result.ttlMs;
    if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) return;
    const bytes = byteLength(result);
    if (bytes > CACHE_MAX_RESULT_BYTES) return;
    this.drop(key);
    this.entries.set(key, { until: now + Math.min(ttl, RELAY_CACHE_MAX_TTL_MS), result, bytes });
    this.bytes += bytes;
    while (this.entries.size > CACHE_MAX_ENTRIES || this.bytes > CACHE_MAX_BYTES)
      this.drop(this.entries.keys().next().value as string);
  }

  /** Forgets a server's results (its configuration or credentials changed). */
  forget(account: string, server: string): void {
    const prefix = `${account}\u0000${server}\u0000`;
    for (const k of [...this.entries.keys()]) if (k.startsWith(prefix)) this.drop(k);
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (e === undefined) return;
    this.entries.delete(key);
    this.bytes -= e.bytes;
  }
}

const byteLength = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? '');
