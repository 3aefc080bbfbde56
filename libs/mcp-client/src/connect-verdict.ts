/** The era a connect landed on, checked before a connection is built on it. */
import type { Client } from '@modelcontextprotocol/client';
import { assertDiscover, discoverFault, type EraVerdict } from './era-verdict.js';
import { McpClientError, McpClientErrorCode } from './errors.js';
import type { McpTransportKind } from './mcp-connection.js';
import type { FetchObservations } from './tracked-fetch.js';

/**
 * A server that answered `server/discover` with a result and still ended on the legacy era sent
 * a result the SDK could not read (garbage, legacy versions, lies): refused with a typed error
 * naming why, rather than taken for a legacy server. An error answer (method not found) is the
 * ordinary legacy signal, and so is an object that claims nothing (no `supportedVersions`).
 */
export async function assertNoModernClaim(observations: FetchObservations, where: string): Promise<void> {
  const answer = await observations.discoverAnswer;
  if (answer === null || typeof answer !== 'object' || !('result' in answer)) return;
  const result: unknown = answer.result;
  // A lenient legacy server may answer any method with an empty object: no claim, no lie.
  if (result !== null && typeof result === 'object' && !Array.isArray(result) && !('supportedVersions' in result))
    return;
  const fault = discoverFault(result) ?? 'the SDK could not use its server/discover result';
  throw new McpClientError(
    McpClientErrorCode.EraNegotiationFailed,
    `${where}: the server answered server/discover but its era cannot be trusted: ${fault}`,
    { transport: 'http' },
  );
}

/** The era the SDK landed on, checked: a modern one needs a discover result that holds together. */
export function verdictOf(client: Client, kind: McpTransportKind, where: string): EraVerdict {
  const protocolVersion = client.getNegotiatedProtocolVersion();
  const era = client.getProtocolEra();
  if (protocolVersion === undefined || era === undefined) {
    throw new McpClientError(
      McpClientErrorCode.EraNegotiationFailed,
      `${where}: the connect ended with no protocol version`,
      { transport: kind },
    );
  }
  if (era === 'legacy') {
    if (protocolVersion >= '2026-07-28') {
      throw new McpClientError(
        McpClientErrorCode.EraNegotiationFailed,
        `${where}: initialize negotiated ${protocolVersion}, a modern version, on the legacy era`,
        { transport: kind },
      );
    }
    return { era: 'legacy', protocolVersion, transport: kind };
  }
  const discover = client.getDiscoverResult();
  assertDiscover(discover, protocolVersion, where);
  // Stored as plain JSON: what the server sent, nothing of the SDK's objects.
  return { era: 'modern', protocolVersion, discover: JSON.parse(JSON.stringify(discover)) as typeof discover };
}
