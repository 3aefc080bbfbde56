import type { DiscoverResult } from '@modelcontextprotocol/client';
import { McpClientError, McpClientErrorCode } from './errors.js';

/** The cached era verdict of a server (plain JSON, storable): probed once, reused by every connect. */
export type EraVerdict =
  | { era: 'modern'; protocolVersion: string; discover: DiscoverResult }
  | { era: 'legacy'; protocolVersion: string; transport: 'http' | 'sse' };

/** The first revision of the modern era: every version before it is a 2025-era (`initialize`) one. */
export const FIRST_MODERN_VERSION = '2026-07-28';
/** More advertised versions than this is not a server's list but garbage. */
const MAX_SUPPORTED_VERSIONS = 32;
const VERSION = /^\d{4}-\d{2}-\d{2}$/;

/**
 * Why a `server/discover` result cannot be trusted as a modern verdict, or `undefined` when it
 * can: `supportedVersions` must be a short list of `YYYY-MM-DD` strings naming at least one
 * modern revision, `capabilities` an object, and `negotiated` (when given) one of the listed
 * versions and a modern one (a server that says one thing and negotiates another lies).
 */
export function discoverFault(discover: unknown, negotiated?: string): string | undefined {
  if (discover === null || typeof discover !== 'object' || Array.isArray(discover))
    return 'the server/discover result is not an object';
  const d = discover as { supportedVersions?: unknown; capabilities?: unknown };
  const versions = d.supportedVersions;
  if (!Array.isArray(versions) || versions.length === 0) return 'supportedVersions is missing or empty';
  if (versions.length > MAX_SUPPORTED_VERSIONS)
    return `supportedVersions lists more than ${MAX_SUPPORTED_VERSIONS} versions`;
  if (!versions.every((v): v is string => typeof v === 'string' && VERSION.test(v)))
    return 'supportedVersions holds a value that is not a YYYY-MM-DD version';
  if (!versions.some((v) => v >= FIRST_MODERN_VERSION))
    return `supportedVersions names no modern revision (${FIRST_MODERN_VERSION} or later)`;
  if (
    d.capabilities !== undefined &&
    (d.capabilities === null || typeof d.capabilities !== 'object' || Array.isArray(d.capabilities))
  ) {
    return 'capabilities is not an object';
  }
  if (negotiated !== undefined) {
    if (!versions.includes(negotiated))
      return `the negotiated version ${negotiated} is not among the advertised supportedVersions`;
    if (negotiated < FIRST_MODERN_VERSION)
      return `the negotiated version ${negotiated} is a legacy one on a modern connection`;
  }
  return undefined;
}

/** Throws `era_negotiation_failed` naming why the discover result is refused. */
export function assertDiscover(
  discover: unknown,
  negotiated: string | undefined,
  where: string,
): asserts discover is DiscoverResult {
  const fault = discoverFault(discover, negotiated);
  if (fault !== undefined) {
    throw new McpClientError(
      McpClientErrorCode.EraNegotiationFailed,
      `${where}: the server's era cannot be trusted: ${fault}`,
      { transport: 'http' },
    );
  }
}

/** Whether `value` has the shape of an {@link EraVerdict} (a stored one may be anything). */
export function isEraVerdict(value: unknown): value is EraVerdict {
  if (value === null || typeof value !== 'object') return false;
  const v = value as { era?: unknown; protocolVersion?: unknown; transport?: unknown; discover?: unknown };
  if (typeof v.protocolVersion !== 'string') return false;
  if (v.era === 'legacy') return v.transport === 'http' || v.transport === 'sse';
  return v.era === 'modern' && v.discover !== null && typeof v.discover === 'object';
}

/** Where a failed request of a connection stands, for {@link shouldReprobe}. */
export interface FailedOnVerdict {
  /** The connection was opened from a cached verdict (no probe of its own). */
  fromPrior: boolean;
  /** It re-probed once already. */
  reprobed: boolean;
  /** The caller cancelled the request. */
  cancelled: boolean;
  /** The era it is speaking. */
  era: EraVerdict['era'];
  /** The failure says the verdict no longer holds (see `isStaleModernPrior`: an unsupported version, a failed negotiation, a 400 or 404 where a modern request was expected). */
  stale: boolean;
}

/**
 * Whether a connection re-probes the server's era and sends the request again: only a modern
 * verdict taken from the cache, only once per connection, never for a cancelled request, and
 * only on an answer that says the verdict stopped working (the request was refused, so nothing
 * ran). A legacy verdict is not re-probed here: a legacy session that is lost is the pool's
 * one fresh handshake.
 */
export function shouldReprobe(failed: FailedOnVerdict): boolean {
  return failed.fromPrior && !failed.reprobed && !failed.cancelled && failed.era === 'modern' && failed.stale;
}
