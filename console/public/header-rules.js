// The rule of a server's configured headers, defined once for both sides: the registry enforces it
// on SetMcpServer (it imports this file through `@mcpx/console`) and the add-server form checks it
// before anything is sent (server-form.js). Plain JavaScript that imports nothing: the browser
// loads it as it is, with no build step, and Node loads the same file.

/** A server holds at most this many headers, plain and secret together. */
export const MAX_HEADERS = 16;
/** A header value's bound, in UTF-8 bytes. */
export const MAX_HEADER_VALUE_BYTES = 4096;
/** A header name: letters, digits and -, at most 128. */
export const HEADER_NAME_RE = /^[A-Za-z0-9-]{1,128}$/;
/** Headers the transport owns (lower case); a configured value would break or spoof the protocol. */
export const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'accept',
  'mcp-session-id',
  'mcp-protocol-version',
  'transfer-encoding',
  'connection',
]);
