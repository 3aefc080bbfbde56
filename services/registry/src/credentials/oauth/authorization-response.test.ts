import { describe, expect, it } from 'vitest';
import { describeAuthorizationError, issuerMatches, readAuthorizationResponse } from './authorization-response.js';

describe('the authorization response', () => {
  it('reads code, state, iss and error; empty is absent; an overlong value is cut', () => {
    const params = new URLSearchParams({
      code: 'c',
      state: '',
      iss: 'https://as.example.com',
      error: 'x'.repeat(10_000),
    });
    const resp = readAuthorizationResponse(params);
    expect(resp).toMatchObject({ code: 'c', state: undefined, iss: 'https://as.example.com' });
    expect(resp.error?.length).toBe(4096);
  });

  it('RFC 9207: the issuer must be the recorded one exactly; a missing iss only where the server never promised one', () => {
    const as = 'https://as.example.com/';
    expect(issuerMatches({ iss: as }, as, true)).toBe(true);
    expect(issuerMatches({ iss: 'https://as.example.com' }, as, true)).toBe(false);
    expect(issuerMatches({ iss: 'https://evil.example.com/' }, as, false)).toBe(false);
    expect(issuerMatches({ iss: undefined }, as, true)).toBe(false);
    expect(issuerMatches({ iss: undefined }, as, false)).toBe(true);
    // Nothing recorded to compare with (the SDK does the same).
    expect(issuerMatches({ iss: 'https://any.example.com/' }, undefined, false)).toBe(true);
  });

  it('shows only registered error codes, never a value of the server', () => {
    expect(describeAuthorizationError('access_denied')).toBe('access_denied');
    expect(describeAuthorizationError('Call +1-555-0100 now')).toBe('an error');
  });
});
