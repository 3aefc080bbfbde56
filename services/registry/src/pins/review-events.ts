import { decodePayload } from '@mcpx/contracts';

// A remote tool name as discovery keeps it (at most 512 characters), without control characters.
// eslint-disable-next-line no-control-regex
const NAME = /^[^\u0000-\u001f\u007f-\u009f]{1,512}$/u;
const CID = /^b[a-z2-7]{20,120}$/;

/**
 * A `tool-review-requested` notification as an event stream passes it on: the server, and per
 * held tool its name, CID, kind and whether it is withheld; nothing else of the payload (which
 * anyone able to publish on the subject could have written). Null when malformed.
 */
export function reviewEventData(bytes: Uint8Array): { server: string; pending: number; changes: Array<{ tool: string; cid: string; kind: string; withheld: boolean }> } | null {
  const e = decodePayload<{ server?: unknown; pending?: unknown; changes?: unknown }>(bytes);
  if (e === null || typeof e !== 'object' || typeof e.server !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(e.server) || !Array.isArray(e.changes)) return null;
  const changes = [];
  for (const c of e.changes.slice(0, 100) as Array<Record<string, unknown>>) {
    if (c === null || typeof c !== 'object') return null;
    if (typeof c.tool !== 'string' || !NAME.test(c.tool) || typeof c.cid !== 'string' || !CID.test(c.cid) || (c.kind !== 'new' && c.kind !== 'changed') || typeof c.withheld !== 'boolean') return null;
    changes.push({ tool: c.tool, cid: c.cid, kind: c.kind, withheld: c.withheld });
  }
  return { server: e.server, pending: typeof e.pending === 'number' && Number.isSafeInteger(e.pending) && e.pending >= 0 ? e.pending : changes.length, changes };
}
