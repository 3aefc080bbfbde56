import { OMITTED_META_KEY } from '@mcpx/domain';

/**
 * MCP Apps (docs/endpoint.md#mcp-apps): a `ui://` resource is an app's HTML, which a host renders
 * in a sandbox (`text/html;profile=mcp-app`; plain `text/html` is taken too). A `ui://` content of
 * another type (a script, an SVG, a binary, no type at all) is not passed on as an app: a host
 * that trusts the scheme would render what it was never meant to. It is replaced in its place by a
 * text that says what it was and why, with `_meta["io.mcpx/omitted"]`
 * `{type: "resource", uri, mimeType?, bytes, reason: "not_html"}`, and the result's
 * `_meta["io.mcpx/omitted"].notHtml` counts them. Other schemes are not touched.
 */

/** Whether a content's type is HTML (its media type's essence, parameters aside). */
export function isHtmlMimeType(mimeType: unknown): boolean {
  if (typeof mimeType !== 'string') return false;
  return mimeType.split(';', 1)[0]!.trim().toLowerCase() === 'text/html';
}

const isAppUri = (uri: unknown): uri is string => typeof uri === 'string' && uri.slice(0, 5).toLowerCase() === 'ui://';

/** Bytes of a content's text (UTF-8) or blob (decoded base64). */
function contentBytes(c: { text?: unknown; blob?: unknown }): number {
  if (typeof c.text === 'string') return Buffer.byteLength(c.text, 'utf8');
  if (typeof c.blob === 'string') return Math.floor((c.blob.replace(/=+$/, '').length * 3) / 4);
  return 0;
}

/** A `resources/read` result with each non-HTML `ui://` content replaced by its marker (the same result when there is none). */
export function screenAppContents(result: Record<string, unknown>): Record<string, unknown> {
  const contents = result.contents;
  if (!Array.isArray(contents)) return result;
  let notHtml = 0;
  const out = contents.map((item: unknown) => {
    const c = (item ?? {}) as { uri?: unknown; mimeType?: unknown; text?: unknown; blob?: unknown };
    if (!isAppUri(c.uri) || isHtmlMimeType(c.mimeType)) return item;
    notHtml++;
    const uri = c.uri.slice(0, 2_048);
    const mimeType = typeof c.mimeType === 'string' ? c.mimeType.slice(0, 128) : undefined;
    const bytes = contentBytes(c);
    const sent = mimeType === undefined ? 'no type' : mimeType;
    return {
      uri,
      mimeType: 'text/plain',
      text: `[mcpx: left out: a ui:// resource is an MCP Apps app and must be HTML (text/html;profile=mcp-app); the server sent ${sent} (${bytes} bytes)]`,
      _meta: {
        [OMITTED_META_KEY]: {
          type: 'resource',
          uri,
          ...(mimeType !== undefined ? { mimeType } : {}),
          bytes,
          reason: 'not_html',
        },
      },
    };
  });
  if (notHtml === 0) return result;
  const meta =
    typeof result._meta === 'object' && result._meta !== null ? (result._meta as Record<string, unknown>) : {};
  // The count is the connector's word: whatever the server put under its key is replaced.
  return { ...result, contents: out, _meta: { ...meta, [OMITTED_META_KEY]: { notHtml } } };
}
