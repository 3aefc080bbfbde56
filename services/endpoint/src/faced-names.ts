import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

/**
 * How the merged face names what its servers serve (docs/endpoint.md#resources-and-prompts): a
 * prompt `<server>__<prompt>`, a resource's URI wrapped as `mcpx://<server>/<URI, percent-encoded>`
 * (`ui://<server>/…` for an MCP Apps `ui://` resource), and a merged list's cursor naming the
 * server whose page comes next. Pure: each maps back exactly, or says it does not.
 */

const WRAPPED_RE = /^(mcpx|ui):\/\/([A-Za-z0-9_.-]{1,64})\/(.*)$/s;

/** The merged face's URI of a server's resource URI (or template). */
export function wrapUri(server: string, uri: string, template = false): string {
  const scheme = uri.toLowerCase().startsWith('ui://') ? 'ui' : 'mcpx';
  let inner = encodeURIComponent(uri);
  // A template's placeholders stay placeholders (a client expands them in place).
  if (template) inner = inner.replace(/%7B/g, '{').replace(/%7D/g, '}');
  return `${scheme}://${server}/${inner}`;
}

/** The server and its own URI of a merged face's URI; undefined when it is not one. */
export function unwrapUri(wrapped: string): { server: string; uri: string } | undefined {
  const m = WRAPPED_RE.exec(wrapped);
  if (m === null) return undefined;
  let uri: string;
  try {
    uri = decodeURIComponent(m[3] as string);
  } catch {
    return undefined;
  }
  // The scheme says which kind it wraps: a ui:// face URI wraps only a ui:// resource, and back.
  if ((m[1] === 'ui') !== uri.toLowerCase().startsWith('ui://')) return undefined;
  return { server: m[2] as string, uri };
}

/** The merged face's prompt name: `<server>__<prompt>`; split at the first `__`. */
export function unwrapName(name: string): { server: string; name: string } | undefined {
  const at = name.indexOf('__');
  if (at <= 0 || at + 2 >= name.length) return undefined;
  return { server: name.slice(0, at), name: name.slice(at + 2) };
}

/** A merged list's cursor: the server whose page comes next, and that server's own cursor. */
export function encodeMergedCursor(server: string, cursor: string | undefined): string {
  return Buffer.from(JSON.stringify(cursor === undefined ? [server] : [server, cursor]), 'utf8').toString('base64url');
}

export function decodeMergedCursor(cursor: string): { server: string; cursor?: string } {
  try {
    if (cursor.length > 2_048) throw new Error('long');
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(v) &&
      typeof v[0] === 'string' &&
      (v.length === 1 || (v.length === 2 && typeof v[1] === 'string'))
    )
      return { server: v[0], ...(v.length === 2 ? { cursor: v[1] as string } : {}) };
  } catch {
    // below
  }
  throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Invalid cursor');
}
