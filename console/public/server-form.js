// The add-server form turned into a SetMcpServer config, with the same limits the registry
// enforces, so a mistake is shown on its own line before anything is sent. Pure: no DOM, so the
// tests load it as the browser does. No message ever repeats a header value, a token, a client
// secret or a private key.
import { KEY_ALGS, MAX_PRIVATE_KEY_BYTES, algsFor, describePrivateKey, keyInWords, needsOf } from './private-key.js';
import { HEADER_NAME_RE, MAX_HEADERS, MAX_HEADER_VALUE_BYTES, RESERVED_HEADERS } from './header-rules.js';

export { KEY_ALGS, MAX_HEADERS, MAX_HEADER_VALUE_BYTES, MAX_PRIVATE_KEY_BYTES };

/** The four ways a server authenticates (`config.auth`). */
export const AUTH_METHODS = ['oauth', 'bearer', 'headers', 'none'];
/** `config.oauth.grant`: sign in (the default), or machine to machine. */
export const OAUTH_GRANTS = ['authorization_code', 'client_credentials'];
export const MAX_CLIENT_ID_BYTES = 512;
export const MAX_CLIENT_SECRET_BYTES = 4096;
export const MAX_SCOPE_BYTES = 1024;
const SCOPE_RE = /^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/;
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
  if (bytes(value) > MAX_HEADER_VALUE_BYTES)
    return `the value of ${name} is longer than ${MAX_HEADER_VALUE_BYTES} bytes`;
  return null;
}

/**
 * The SetMcpServer `config` of the form's values `{url, transport, auth, token, headers, grant,
 * clientId, clientSecret, credential, privateKey, keyAlg, scope}`: `{config, errors}`, each error
 * `{field, message}` (field is one of those form fields; header errors carry their `line`).
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
    const token = String(values.token ?? '')
      .trim()
      .replace(/^Bearer\s+/i, '');
    if (token === '') errors.push({ field: 'token', message: 'paste the token' });
    else if (/\s|\0/.test(token))
      errors.push({ field: 'token', message: 'the token must not contain spaces or line breaks' });
    else config.token = token;
  } else if (auth === 'headers') {
    const parsed = parseHeaderLines(values.headers);
    for (const e of parsed.errors) errors.push({ field: 'headers', line: e.line, message: e.message });
    if (parsed.errors.length === 0 && Object.keys(parsed.headers).length === 0)
      errors.push({ field: 'headers', line: 0, message: 'give at least one header, one per line: Name: value' });
    config.secretHeaders = parsed.headers;
  } else if (auth === 'oauth') {
    const oauth = oauthClient(values, errors);
    if (oauth !== undefined) config.oauth = oauth;
  }
  return { config, errors };
}

/**
 * `config.oauth` of the form's OAuth values (undefined: none), its mistakes pushed to `errors`.
 * Sign in (`grant` authorization_code or empty): an optional pre-registered client ID and secret.
 * Machine to machine (`grant` client_credentials): a client ID and either its secret or a private
 * key (`credential` 'secret' or 'key'; without it, whichever is filled), an optional scope.
 */
function oauthClient(values, errors) {
  const grant = values.grant || OAUTH_GRANTS[0];
  if (!OAUTH_GRANTS.includes(grant)) {
    errors.push({
      field: 'grant',
      message: 'pick sign in (authorization code) or machine to machine (client credentials)',
    });
    return undefined;
  }
  const clientId = String(values.clientId ?? '').trim();
  const clientSecret = String(values.clientSecret ?? '');
  const privateKey = String(values.privateKey ?? '').trim();
  const machine = grant === 'client_credentials';
  const before = errors.length;
  if (clientId === '') {
    if (machine) errors.push({ field: 'clientId', message: 'the client ID is required for machine to machine' });
    else if (clientSecret !== '')
      errors.push({ field: 'clientSecret', message: 'a client secret needs its client ID' });
  } else if (bytes(clientId) > MAX_CLIENT_ID_BYTES || [...clientId].some((c) => c < ' ' || c === '\x7f')) {
    errors.push({
      field: 'clientId',
      message: `the client ID must be at most ${MAX_CLIENT_ID_BYTES} bytes, without control characters`,
    });
  }
  if (!machine) {
    checkSecret(clientSecret, errors);
    return errors.length === before && clientId !== ''
      ? { clientId, ...(clientSecret !== '' ? { clientSecret } : {}) }
      : undefined;
  }
  const client = { clientId, grant };
  const credential = values.credential || (privateKey !== '' && clientSecret === '' ? 'key' : 'secret');
  if (credential === 'key') {
    const keyAlg = String(values.keyAlg ?? '');
    const algKnown = KEY_ALGS.includes(keyAlg);
    if (!algKnown)
      errors.push({ field: 'keyAlg', message: `pick the algorithm the key signs with: ${KEY_ALGS.join(', ')}` });
    if (privateKey === '')
      errors.push({ field: 'privateKey', message: 'paste the private key (PEM PKCS#8, -----BEGIN PRIVATE KEY-----)' });
    else if (bytes(privateKey) > MAX_PRIVATE_KEY_BYTES)
      errors.push({ field: 'privateKey', message: `the private key is longer than ${MAX_PRIVATE_KEY_BYTES} bytes` });
    else if (algKnown) checkKeyFits(privateKey, keyAlg, errors);
    Object.assign(client, { privateKey, keyAlg });
  } else if (credential === 'secret') {
    if (clientSecret === '')
      errors.push({ field: 'clientSecret', message: 'paste the client secret (or use a private key)' });
    else if (privateKey !== '' && !values.credential)
      errors.push({ field: 'privateKey', message: 'give a client secret or a private key, not both' });
    checkSecret(clientSecret, errors);
    client.clientSecret = clientSecret;
  } else errors.push({ field: 'credential', message: 'pick a client secret or a private key' });
  // Scope tokens are separated by single spaces (RFC 6749 §3.3): runs of whitespace are folded.
  const scope = String(values.scope ?? '')
    .trim()
    .split(/\s+/)
    .join(' ');
  if (scope !== '') {
    if (bytes(scope) > MAX_SCOPE_BYTES || !SCOPE_RE.test(scope))
      errors.push({
        field: 'scope',
        message: `scope tokens are separated by spaces, hold no " or \\, and are at most ${MAX_SCOPE_BYTES} bytes in all`,
      });
    client.scope = scope;
  }
  return errors.length === before ? client : undefined;
}

function checkSecret(secret, errors) {
  if (bytes(secret) > MAX_CLIENT_SECRET_BYTES)
    errors.push({
      field: 'clientSecret',
      message: `the client secret is longer than ${MAX_CLIENT_SECRET_BYTES} bytes`,
    });
}

/** The key is a PKCS#8 key that `alg` signs with; never a word of its contents in a message. */
function checkKeyFits(pem, alg, errors) {
  const key = describePrivateKey(pem);
  if (key.problem !== undefined) {
    errors.push({ field: 'privateKey', message: `the private key ${key.problem}` });
    return;
  }
  const fits = algsFor(key);
  if (fits.includes(alg)) return;
  if (fits.length === 0)
    errors.push({
      field: 'privateKey',
      message: `the private key is ${keyInWords(key)}: ${alg} signs with ${needsOf(alg)}`,
    });
  else
    errors.push({
      field: 'keyAlg',
      message: `${alg} signs with ${needsOf(alg)}, and the key is ${keyInWords(key)}: pick ${fits.join(' or ')}`,
    });
}
