/**
 * A path segment at least this long that mixes letters and digits looks like a credential
 * (some MCP servers put API keys in the path: `/mcp/sk-ak-…/sse`).
 */
const SECRET_LIKE_SEGMENT = /^(?=.*[A-Za-z])(?=.*\d)[^/]{20,}$/;

/**
 * A URL fit for span attributes, metric labels and logs: userinfo, query and fragment removed,
 * and credential-like path segments replaced by `:redacted`. An unparsable input gives
 * `[invalid url]` rather than echoing it.
 */
export function safeUrlForTelemetry(url: string | URL): string {
  let parsed: URL;
  try {
    parsed = new URL(url.toString());
  } catch {
    return '[invalid url]';
  }
  parsed.username = '';
  parsed.password = '';
  parsed.search = '';
  parsed.hash = '';
  parsed.pathname = parsed.pathname
    .split('/')
    .map((segment) => (SECRET_LIKE_SEGMENT.test(segment) ? ':redacted' : segment))
    .join('/');
  return parsed.toString();
}
