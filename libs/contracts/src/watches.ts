import { decodeStrict, encodePayload } from './codec.js';
import { ErrorCodes, WireError, invalidInput, type WireErrorShape } from './errors.js';
import { isMap, matching, oneOf, optional, shape, type Rule } from './field-rules.js';
import { resourceUriFault } from './relay.js';

/**
 * Upstream subscriptions for the agent endpoint (docs/endpoint.md#subscriptions): the endpoint
 * asks the proxy to hold one (`mcp.proxy.watch`, request/reply, queue group `proxy`; renewals
 * and releases go to the instance that holds it, `mcp.proxy.<instance>.watch`), and the proxy
 * publishes what the remote server says on `mcp.notices.<acct>.<server>` ({@link UpstreamNotice}).
 * A hold is a lease of one endpoint instance (`holder`): kept while renewed, dropped when released
 * or when its lease runs out, so an endpoint that dies leaves nothing open for long.
 */

/** What a hold watches: a server's list changes, or one resource's updates. */
export const WatchKinds = { lists: 'lists', resource: 'resource' } as const;
export type WatchKind = (typeof WatchKinds)[keyof typeof WatchKinds];

export interface WatchRequest {
  op: 'hold' | 'release';
  account: string;
  /** The agent whose grant of `server` allows the hold (checked by the proxy, as for a call). */
  agent: string;
  /** The endpoint instance holding the lease (its instance token). */
  holder: string;
  server: string;
  kind: WatchKind;
  /** The resource's URI, as the server names it (`kind: 'resource'` only). */
  uri?: string;
}

/**
 * The proxy's answer: `live` when an upstream subscription carries the hold, `none` when the
 * server has nothing to say of it (it declares no list changes); a resource of a server that
 * declares no subscriptions is an error (`not_found`, the server's `-32601` in `details.mcpCode`).
 */
export type WatchReply =
  { ok: true; instance: string; upstream: 'live' | 'none' } | { ok: false; instance: string; error: WireErrorShape };

/** A lease lasts this long; the holder renews it well within (every third of it). */
export const WATCH_LEASE_MS = 60_000;

/** The kinds of notice a remote server gives that reach endpoint clients. */
export const NoticeKinds = { tools: 'tools', prompts: 'prompts', resources: 'resources', updated: 'updated' } as const;
export type NoticeKind = (typeof NoticeKinds)[keyof typeof NoticeKinds];

/** `mcp.notices.<acct>.<server>`: a remote server's list change or resource update, coalesced by the proxy. */
export interface UpstreamNotice {
  account: string;
  server: string;
  kind: NoticeKind;
  /** The updated resource, as the server names it (`kind: 'updated'` only). */
  uri?: string;
  /** How many of the server's notices this one stands for (more than 1: a flood was coalesced). */
  count: number;
}

const id = matching(/^[A-Za-z0-9_-]{1,128}$/, '1-128 letters, digits, _ or -');
const serverName = matching(/^[A-Za-z0-9_.-]{1,64}$/, 'a server name');
const uriRule: Rule<string | undefined> = (v, field) => {
  if (v === undefined || v === null) return undefined;
  const fault = resourceUriFault(v);
  if (fault !== undefined) throw invalidInput(field, fault);
  return v as string;
};
const positive: Rule<number> = (v, field) => {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1)
    throw invalidInput(field, 'must be a positive integer');
  return v;
};

const watchFields = shape({
  op: oneOf('hold', 'release'),
  account: id,
  agent: id,
  holder: id,
  server: serverName,
  kind: oneOf(WatchKinds.lists, WatchKinds.resource),
  uri: optional(uriRule),
});
const noticeFields = shape({
  account: id,
  server: serverName,
  kind: oneOf(NoticeKinds.tools, NoticeKinds.prompts, NoticeKinds.resources, NoticeKinds.updated),
  uri: optional(uriRule),
  count: positive,
});

/** A watch request checked: only its fields, a resource hold with its URI and a lists hold without. */
export function parseWatchRequest(raw: unknown): WatchRequest {
  if (!isMap(raw)) throw invalidInput('request', 'must be a map');
  const w = watchFields(raw, '');
  if (w.kind === WatchKinds.resource && w.uri === undefined) throw invalidInput('uri', 'a resource hold names its URI');
  if (w.kind === WatchKinds.lists && w.uri !== undefined) throw invalidInput('uri', 'a lists hold names no URI');
  return {
    op: w.op,
    account: w.account,
    agent: w.agent,
    holder: w.holder,
    server: w.server,
    kind: w.kind,
    ...(w.uri !== undefined ? { uri: w.uri } : {}),
  };
}

export function decodeWatchRequest(data: Uint8Array): WatchRequest {
  return parseWatchRequest(decodeStrict(data, 'request'));
}

/** Encodes a watch request, checked first (nothing is sent that the proxy would refuse). */
export function encodeWatchRequest(req: WatchRequest): Uint8Array {
  return encodePayload(parseWatchRequest(req));
}

/** A watch reply, strictly decoded; a malformed one is a typed `internal` naming the field. */
export function decodeWatchReply(bytes: Uint8Array): WatchReply {
  const malformed = (field: string): WireError =>
    new WireError(ErrorCodes.internal, 'malformed watch reply from the proxy', { field });
  let r: unknown;
  try {
    r = decodeStrict(bytes, 'reply');
  } catch {
    throw malformed('reply');
  }
  if (!isMap(r) || typeof r.instance !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(r.instance))
    throw malformed('reply.instance');
  if (r.ok === true) {
    if (r.upstream !== 'live' && r.upstream !== 'none') throw malformed('reply.upstream');
    return { ok: true, instance: r.instance, upstream: r.upstream };
  }
  if (r.ok === false) return { ok: false, instance: r.instance, error: WireError.from(r.error).toJSON() };
  throw malformed('reply.ok');
}

export function parseUpstreamNotice(raw: unknown): UpstreamNotice {
  if (!isMap(raw)) throw invalidInput('payload', 'must be a map');
  const n = noticeFields(raw, '');
  if ((n.kind === NoticeKinds.updated) !== (n.uri !== undefined))
    throw invalidInput('uri', 'an update names its URI, a list change none');
  return {
    account: n.account,
    server: n.server,
    kind: n.kind,
    count: n.count,
    ...(n.uri !== undefined ? { uri: n.uri } : {}),
  };
}

/** Decodes a notice with the strict decoder, then its field rules. */
export function decodeUpstreamNotice(data: Uint8Array): UpstreamNotice {
  return parseUpstreamNotice(decodeStrict(data, 'payload'));
}
