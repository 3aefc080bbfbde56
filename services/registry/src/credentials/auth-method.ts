import { invalidInput } from '@mcpx/contracts';
import { AuthMethods, type AuthMethod } from '@mcpx/stored';

/** How a custom server authenticates (`config.auth`): the stored vocabulary, defined in `@mcpx/stored`. */
export { AuthMethods, type AuthMethod };

/** The header a bearer token travels in; under `bearer` no other source may set it. */
export const BEARER_HEADER = 'Authorization';
/** `Bearer ` + the token stays within a header value's bound. */
const MAX_TOKEN_BYTES = 4096 - 'Bearer '.length;

export function isAuthMethod(v: unknown): v is AuthMethod {
  return typeof v === 'string' && Object.hasOwn(AuthMethods, v);
}

/** The method a stored config uses: its own, else `headers` when it has any header, else `none`. */
export function effectiveAuth(config: {
  auth?: string;
  headers?: Record<string, string>;
  secretRefs?: Record<string, string>;
}): AuthMethod {
  if (isAuthMethod(config.auth)) return config.auth;
  return Object.keys(config.headers ?? {}).length + Object.keys(config.secretRefs ?? {}).length > 0
    ? AuthMethods.headers
    : AuthMethods.none;
}

interface HeaderSources {
  auth?: AuthMethod;
  headers: Record<string, string>;
  secretHeaders: Record<string, string>;
  secretRefs: Record<string, string>;
  token?: string;
}

const SOURCES = ['headers', 'secretHeaders', 'secretRefs'] as const;

/**
 * Checks the header sources and `token` against `auth` (every error names its field and never
 * echoes a value) and shapes them for storage: under `headers` every header given is sealed.
 */
export function applyAuthMethod<T extends HeaderSources>(config: T, token: unknown): T {
  if (token !== undefined && config.auth !== AuthMethods.bearer)
    throw invalidInput('config.token', 'is only taken with auth bearer');
  switch (config.auth) {
    case undefined:
    case AuthMethods.oauth:
      return config;
    case AuthMethods.none:
      for (const source of SOURCES) {
        const first = Object.keys(config[source])[0];
        if (first !== undefined) throw invalidInput(`config.${source}.${first}`, 'auth none sends no headers');
      }
      return config;
    case AuthMethods.bearer:
      for (const source of SOURCES) {
        const clash = Object.keys(config[source]).find((h) => h.toLowerCase() === BEARER_HEADER.toLowerCase());
        if (clash !== undefined)
          throw invalidInput(`config.${source}.${clash}`, 'is set by the bearer token under auth bearer');
      }
      if (token === undefined) return config;
      if (typeof token !== 'string' || token === '') throw invalidInput('config.token', 'must be a non-empty string');
      if (/[\s\0]/.test(token)) throw invalidInput('config.token', 'must not contain whitespace or NUL');
      if (Buffer.byteLength(token, 'utf8') > MAX_TOKEN_BYTES)
        throw invalidInput('config.token', `must be at most ${MAX_TOKEN_BYTES} bytes`);
      return { ...config, token };
    case AuthMethods.headers:
      // Under `headers`, every custom header is stored sealed (docs/servers.md#auth-methods).
      return { ...config, headers: {}, secretHeaders: { ...config.headers, ...config.secretHeaders } };
  }
}
