import { encodePayload } from '@mcpx/contracts';
import type { EraVerdict } from '@mcpx/mcp-client';

/** Bounds on a verdict we store (a `server/discover` result is the remote server's data: untrusted). */
export const VERDICT_LIMITS = { maxBytes: 64 * 1024, maxVersionLength: 64 } as const;

/** The auth context a verdict is keyed by: one copy, in `@mcpx/contracts`, shared with the other service. */
export { authContextOf } from '@mcpx/contracts';

/** Whether `value` looks like an auth context (64 hex digits). */
export function isAuthContext(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

/**
 * A verdict as we accept it from a connection or a proxy's message: the shape checked, bounded,
 * and reduced to its known fields. Anything else is undefined (never stored).
 */
export function parseEraVerdict(value: unknown): EraVerdict | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Record<string, unknown>;
  const version = v.protocolVersion;
  if (typeof version !== 'string' || version === '' || version.length > VERDICT_LIMITS.maxVersionLength)
    return undefined;
  let verdict: EraVerdict;
  if (v.era === 'legacy') {
    if (v.transport !== 'http' && v.transport !== 'sse') return undefined;
    verdict = { era: 'legacy', protocolVersion: version, transport: v.transport };
  } else if (v.era === 'modern') {
    if (v.discover === null || typeof v.discover !== 'object' || Array.isArray(v.discover)) return undefined;
    verdict = {
      era: 'modern',
      protocolVersion: version,
      discover: v.discover as Extract<EraVerdict, { era: 'modern' }>['discover'],
    };
  } else return undefined;
  try {
    if (encodePayload(verdict).byteLength > VERDICT_LIMITS.maxBytes) return undefined;
  } catch {
    return undefined;
  }
  return verdict;
}
