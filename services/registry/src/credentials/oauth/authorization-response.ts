/**
 * The authorization response as the callback receives it (RFC 6749 §4.1.2, RFC 9207 §2): what the
 * authorization server put on the redirect to the registry's callback. Absent and empty values
 * are both `undefined` (an empty `iss` is no issuer, and is then refused where one is required).
 */
export interface AuthorizationResponse {
  code: string | undefined;
  state: string | undefined;
  /** RFC 9207: the issuer that produced the response (form-urldecoded, compared exactly). */
  iss: string | undefined;
  /** An error response's `error` code (its description and URI are never shown: see {@link describeAuthorizationError}). */
  error: string | undefined;
}

/** Longest value read from any parameter: nothing longer is a real code, state, issuer or error. */
const MAX_PARAM_CHARS = 4096;

function param(params: URLSearchParams, name: string): string | undefined {
  const v = params.get(name);
  return v === null || v === '' ? undefined : v.slice(0, MAX_PARAM_CHARS);
}

export function readAuthorizationResponse(params: URLSearchParams): AuthorizationResponse {
  return {
    code: param(params, 'code'),
    state: param(params, 'state'),
    iss: param(params, 'iss'),
    error: param(params, 'error'),
  };
}

/** The error codes of RFC 6749 §4.1.2.1: the only `error` values ever shown to the owner. */
const REGISTERED_ERRORS = new Set([
  'invalid_request',
  'unauthorized_client',
  'access_denied',
  'unsupported_response_type',
  'invalid_scope',
  'server_error',
  'temporarily_unavailable',
]);

/**
 * What the owner is told of an error response whose issuer was checked: a registered error code
 * as is, anything else as "an error" (the value is the authorization server's, possibly an
 * attacker's in a mix-up: no free text of it reaches the page).
 */
export function describeAuthorizationError(error: string): string {
  return REGISTERED_ERRORS.has(error) ? error : 'an error';
}

/**
 * RFC 9207 §2.4 for a response whose issuer can be known: `expected` is the issuer of the
 * authorization server's validated metadata that the authorization was started at. A response
 * with another `iss`, or without one where the server said it always sends one, is not from
 * that server. No recorded issuer: nothing to compare (the SDK does the same).
 */
export function issuerMatches(
  resp: Pick<AuthorizationResponse, 'iss'>,
  expected: string | undefined,
  issParameterSupported: boolean,
): boolean {
  if (expected === undefined) return true;
  if (resp.iss === undefined) return !issParameterSupported;
  return resp.iss === expected;
}
