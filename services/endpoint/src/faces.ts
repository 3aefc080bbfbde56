/**
 * The endpoint's two faces of an agent: the merged face `/v1/agents/<agent>/mcp` (every granted
 * server's tools as `<server>__<tool>`) and the per-server face
 * `/v1/agents/<agent>/servers/<server>/mcp` (one granted server's tools under their own names).
 * Both are the same MCP server behind the same gate; only the names differ (docs/endpoint.md#faces).
 */

/** An agent face's path: the agent by id or by name (the token says whose), and optionally one server. */
export const FACE_PATH_RE =
  /^\/v1\/agents\/([A-Za-z0-9_.~%-]{1,200})(?:\/servers\/([A-Za-z0-9_.~%-]{1,200}))?\/mcp\/?$/;

/** The raw (still percent-encoded) segments of a face's path, or undefined for another path. */
export function facePath(pathname: string): { agent: string; server?: string } | undefined {
  const m = FACE_PATH_RE.exec(pathname);
  if (m === null) return undefined;
  return { agent: m[1] as string, ...(m[2] !== undefined ? { server: m[2] } : {}) };
}
