import { describe, expect, it } from 'vitest';
import { bindToOrigin, unbind, urlOrigin, valueForOrigin } from './secret-origin.js';

describe('secret origin codec', () => {
  it('takes the origin of a URL, and none of what has none', () => {
    expect(urlOrigin('https://api.example.com:8443/mcp?x=1')).toBe('https://api.example.com:8443');
    expect(urlOrigin('https://API.example.com:443/mcp')).toBe('https://api.example.com');
    expect(urlOrigin('not a url')).toBe('');
    expect(urlOrigin('data:text/plain,hi')).toBe('');
  });

  it('opens what it bound, with the origin it was bound to', () => {
    const sealed = bindToOrigin('Bearer s3cr3t', 'https://a.example');
    expect(unbind(sealed)).toEqual({ value: 'Bearer s3cr3t', origin: 'https://a.example' });
    expect(unbind('legacy value')).toEqual({ value: 'legacy value' });
    // A prefix without its end is bound to an origin no URL has.
    expect(unbind('\0origin=https://a.example')).toEqual({ value: '', origin: '\0' });
  });

  it('gives a bound value only to its own origin, an unbound one to none', () => {
    const sealed = bindToOrigin('Bearer s3cr3t', 'https://a.example');
    expect(valueForOrigin(sealed, 'https://a.example')).toBe('Bearer s3cr3t');
    expect(valueForOrigin(sealed, 'https://b.example')).toBeUndefined();
    expect(valueForOrigin(sealed, 'http://a.example')).toBeUndefined();
    expect(valueForOrigin(sealed, '')).toBeUndefined();
    expect(valueForOrigin('\0origin=https://a.example', 'https://a.example')).toBeUndefined();
    expect(valueForOrigin('legacy value', 'https://b.example')).toBeUndefined();
    expect(valueForOrigin('legacy value', '')).toBeUndefined();
  });

  it('agrees with itself: what the registry opens for an origin is what the proxy sends there', () => {
    const origins = ['https://a.example', 'https://b.example:8443', '', '\0'];
    const texts = ['v', bindToOrigin('v', 'https://a.example'), bindToOrigin('v', ''), '\0origin=broken'];
    for (const text of texts) {
      for (const origin of origins.slice(0, 3)) {
        const opened = unbind(text);
        const registry =
          origin !== '' && opened.origin !== undefined && opened.origin === origin ? opened.value : undefined;
        expect({ text, origin, sent: valueForOrigin(text, origin) }).toEqual({ text, origin, sent: registry });
      }
    }
  });
});
