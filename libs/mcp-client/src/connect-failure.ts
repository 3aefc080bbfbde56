// A failed connect in words a person understands: what happened and what to try, on one line.
// Decided by the error's code, HTTP status, challenge and socket error code, never by its message
// text; the raw message stays where it was (a server's `status.error`) for whoever asks for it.
import { McpClientError, McpClientErrorCode } from './errors.js';
import { resourceMetadataUrl } from './oauth.js';

/** How the server was configured to sign in, as the owner chose it (`config.auth`). */
export type ConfiguredAuth = 'oauth' | 'bearer' | 'headers' | 'none' | undefined;

/** Socket and TLS error codes that say the other end does not speak TLS on that port. */
const PLAIN_PORT_TLS =
  /^(ERR_SSL_WRONG_VERSION_NUMBER|ERR_SSL_PACKET_LENGTH_TOO_LONG|ERR_SSL_HTTP_REQUEST|ERR_SSL_UNKNOWN_PROTOCOL|EPROTO)$/;
/** Certificate errors of Node's TLS (the server speaks TLS, its certificate is not trusted). */
const CERTIFICATE =
  /^(CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|ERR_TLS_CERT_ALTNAME_INVALID|ERR_TLS_CERT)/;
const MAX_CAUSES = 6;

/**
 * The socket error code under an error (`ECONNREFUSED`, `ERR_SSL_WRONG_VERSION_NUMBER`, …): the
 * `code` of the deepest cause that has one (undici wraps the socket's error in `fetch failed`;
 * happy eyeballs in an AggregateError).
 */
export function socketErrorCode(err: unknown): string | undefined {
  let found: string | undefined;
  let current: unknown = err;
  for (let depth = 0; depth < MAX_CAUSES && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (
      typeof code === 'string' &&
      /^[A-Z][A-Z0-9_]{1,63}$/.test(code) &&
      !code.startsWith('UND_ERR_') &&
      !(current instanceof McpClientError)
    )
      found = code;
    if (current instanceof AggregateError && current.errors[0] instanceof Error) current = current.errors[0];
    else current = current.cause;
  }
  return found;
}

function place(url: URL): string {
  return url.host;
}

/**
 * One line for a failed connect: what happened, in words, and what to try. `err` is what
 * `connectMcp` threw (an {@link McpClientError}); `url` the server's URL; `auth` the auth method
 * the owner set. Undefined when nothing better than the raw message can be said (it is then
 * shown as it is). Never carries a response body: an HTML page is never shown.
 */
export function explainConnectFailure(err: unknown, serverUrl: string, auth?: ConfiguredAuth): string | undefined {
  let url: URL;
  try {
    url = new URL(serverUrl);
  } catch {
    return 'the URL is not a valid URL: give the full address, e.g. https://mcp.example.com/mcp';
  }
  if (!(err instanceof McpClientError)) return undefined;
  const path = url.pathname;
  const status = err.status;
  switch (err.code) {
    case McpClientErrorCode.Unauthorized: {
      if (resourceMetadataUrl(err.wwwAuthenticate) !== undefined || /^bearer\b/i.test(err.wwwAuthenticate ?? '')) {
        if (auth === 'oauth')
          return 'this server signs in with OAuth and is not authorized yet: authorize it (mcpx servers authorize NAME, or Authorize in the console)';
        return 'this server signs in with OAuth: set it with --auth oauth (in the console: Authorize)';
      }
      return auth === 'none' || auth === undefined
        ? 'the server asks for credentials (HTTP 401): give them with --auth bearer --token T or --auth headers'
        : 'the server refused the credentials it was given (HTTP 401): check the token or headers';
    }
    case McpClientErrorCode.Timeout:
      return `${place(url)} did not answer in time: check that the server is up and reachable from the connector`;
    case McpClientErrorCode.EraNegotiationFailed:
      return 'the server answered, but no MCP protocol version could be agreed with it: check that the URL is an MCP endpoint and the server is up to date';
    case McpClientErrorCode.ConnectFailed:
    case McpClientErrorCode.TransportError:
      break;
    case McpClientErrorCode.Cancelled:
    case McpClientErrorCode.SessionExpired:
    case McpClientErrorCode.ProtocolError:
    case McpClientErrorCode.MaybeExecuted:
      return undefined;
  }
  if (status !== undefined) {
    if (status === 404) {
      return path === '/mcp' || path === '/sse'
        ? `the server answered 404 at ${path}: check the path in the server's documentation`
        : `the server answered 404 at ${path}; MCP servers usually serve /mcp`;
    }
    if (status === 403)
      return `the server refused access (HTTP 403): the credentials lack the permission, or the server accepts no connector from here`;
    if (status === 405 || status === 406 || status === 415)
      return `the server at ${path} answered HTTP ${status}: it does not look like an MCP endpoint; check the URL's path (usually /mcp)`;
    if (status === 429) return 'the server is limiting requests (HTTP 429): try again later';
    if (status >= 500) return `the server failed (HTTP ${status}): try again later, or tell its operator`;
    if (status >= 300 && status < 400) return `the server redirects (HTTP ${status}): give the URL it redirects to`;
    return `the server answered HTTP ${status} at ${path}: check the URL and the credentials`;
  }
  const socket = err.details.socketCode ?? socketErrorCode(err);
  if (socket === undefined) return undefined;
  if (socket === 'ECONNREFUSED')
    return `nothing answers at ${place(url)} (connection refused): is the server running, and is the port right?`;
  if (socket === 'ENOTFOUND' || socket === 'EAI_AGAIN')
    return `the host ${url.hostname} is not found: check the URL's host name`;
  if (PLAIN_PORT_TLS.test(socket)) {
    return url.protocol === 'https:'
      ? `https to ${place(url)}, which does not speak TLS: use http:// for a plain server, or the server's https port`
      : `the TLS connection to ${place(url)} failed (${socket}): check the URL's scheme and port`;
  }
  if (CERTIFICATE.test(socket))
    return `the certificate of ${place(url)} is not trusted (${socket}): the server needs a certificate from a public authority`;
  if (socket === 'ECONNRESET' || socket === 'EPIPE')
    return `${place(url)} closed the connection before answering: check the URL, the scheme (http or https) and the port`;
  if (socket === 'ETIMEDOUT' || socket === 'ENETUNREACH' || socket === 'EHOSTUNREACH')
    return `${place(url)} cannot be reached (${socket}): check the host, and that the connector's network may reach it`;
  return undefined;
}
