// The add-server form turned into a SetMcpServer config, with the same limits the registry
// enforces, so a mistake is shown on its own line before anything is sent. Pure: no DOM, so the
// tests load it as the browser does. No message ever repeats a header value or a token.

/** The four ways a server authenticates (`config.auth`). */
export const AUTH_METHODS = ['oauth', 'bearer', 'headers', 'none'];
export const MAX_HEADERS = 16;
export const MAX_HEADER_VALUE_BYTES = 4096;
const HEADER_NAME_RE = /^[A-Za-z0-9-]{1,128}$/;
/** Headers the transport owns (the registry refuses them too). */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'content-type', 'accept', 'mcp-session-id', 'mcp-protocol-version', 'transfer-encoding', 'connection']);
const bytes = (s) => new TextEncoder().encode(s).length;

/**
 * Parses custom headers written one per line as `Name: value` (blank lines are skipped; the value
 * is everything after the first colon, trimmed). Returns `{headers, errors}`, each error
 * `{line, message}` with the 1-based line it is about (0: the whole list).
 */
export function parseHeaderLines(text) {
  const headers = {};
  const errors = [];
  const seen = new Map();
  const lines = String(text ?? '').split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    if (raw.trim() === '') continue;
    const problem = headerLineProblem(raw, seen);
    if (problem !== null) {
      errors.push({ line: i + 1, message: problem });
      continue;
    }
    const colon = raw.indexOf(':');
    const name = raw.slice(0, colon).trim();
    seen.set(name.toLowerCase(), i + 1);
    headers[name] = raw.slice(colon + 1).trim();
  }
  if (seen.size > MAX_HEADERS) errors.push({ line: 0, message: `at most ${MAX_HEADERS} headers` });
  return { headers, errors };
}

/** What is wrong with one non-blank line (null: nothing); `seen` maps lowercased names to lines. */
function headerLineProblem(raw, seen) {
  const colon = raw.indexOf(':');
  if (colon < 0) return 'expected "Name: value" (no colon)';
  const name = raw.slice(0, colon).trim();
  const value = raw.slice(colon + 1).trim();
  const lower = name.toLowerCase();
  if (name === '') return 'the header name before ":" is missing';
  // An invalid name is not repeated: a malformed line may be part of a value.
  if (!HEADER_NAME_RE.test(name)) return 'the header name may hold only letters, digits and - (at most 128)';
  if (RESERVED_HEADERS.has(lower)) return `${name} is set by the transport and cannot be configured`;
  if (seen.has(lower)) return `${name} is already given on line ${seen.get(lower)}`;
  if (value === '') return `${name} has no value`;
  if (value.includes('\0')) return `the value of ${name} must not contain NUL`;
  if (bytes(value) > MAX_HEADER_VALUE_BYTES) return `the value of ${name} is longer than ${MAX_HEADER_VALUE_BYTES} bytes`;
  return null;
}

/**
 * The SetMcpServer `config` of the form's values `{url, transport, auth, token, headers,
 * clientId, clientSecret}`: `{config, errors}`, each error `{field, message}` (field is a form
 * field: url, auth, token, headers, clientId, clientSecret; header errors carry their `line`).
 * Custom headers go as secret headers: every one is stored encrypted.
 */
export function serverConfig(values) {
  const errors = [];
  const url = String(values.url ?? '').trim();
  if (url === '') errors.push({ field: 'url', message: 'the URL is required' });
  const config = { url };
  if (values.transport === 'http' || values.transport === 'sse') config.transport = values.transport;
  const auth = values.auth;
  if (!AUTH_METHODS.includes(auth)) {
    errors.push({ field: 'auth', message: 'pick an auth method' });
    return { config, errors };
  }
  config.auth = auth;
  if (auth === 'bearer') {
    // A pasted "Bearer …" keeps only the token: the registry adds the scheme.
    const token = String(values.token ?? '').trim().replace(/^Bearer\s+/i, '');
    if (token === '') errors.push({ field: 'token', message: 'paste the token' });
    else if (/\s|\0/.test(token)) errors.push({ field: 'token', message: 'the token must not contain spaces or line breaks' });
    else config.token = token;
  } else if (auth === 'headers') {
    const parsed = parseHeaderLines(values.headers);
    for (const e of parsed.errors) errors.push({ field: 'headers', line: e.line, message: e.message });
    if (parsed.errors.length === 0 && Object.keys(parsed.headers).length === 0) errors.push({ field: 'headers', line: 0, message: 'give at least one header, one per line: Name: value' });
    config.secretHeaders = parsed.headers;
  } else if (auth === 'oauth') {
    const clientId = String(values.clientId ?? '').trim();
    const clientSecret = String(values.clientSecret ?? '');
    if (clientId !== '') config.oauth = { clientId, ...(clientSecret !== '' ? { clientSecret } : {}) };
    else if (clientSecret !== '') errors.push({ field: 'clientSecret', message: 'a client secret needs its client ID' });
  }
  return { config, errors };
}
