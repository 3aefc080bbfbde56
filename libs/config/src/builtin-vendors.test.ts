import { describe, expect, it } from 'vitest';
import { loadConfig, parseBuiltinTokenEndpoints, parseBuiltinVendorClients } from './config.js';

describe('BUILTIN_TOKEN_ENDPOINTS and BUILTIN_VENDOR_CLIENTS', () => {
  it('parse vendor=url and vendor=clientId[:clientSecret], defaulting to none', () => {
    expect(parseBuiltinTokenEndpoints(undefined)).toEqual({});
    expect(parseBuiltinTokenEndpoints('github=http://127.0.0.1:5000/token')).toEqual({
      github: 'http://127.0.0.1:5000/token',
    });
    expect(parseBuiltinVendorClients(undefined)).toEqual({});
    expect(parseBuiltinVendorClients('github=Iv1.abc:s3cr:et, linear=public-client')).toEqual({
      github: { clientId: 'Iv1.abc', clientSecret: 's3cr:et' },
      linear: { clientId: 'public-client' },
    });
    const config = loadConfig('registry', {
      OUTBOUND_PROFILE: 'local',
      BUILTIN_TOKEN_ENDPOINTS: 'linear=http://127.0.0.1:1/token',
      BUILTIN_VENDOR_CLIENTS: 'linear=id:secret',
    });
    expect(config.builtinTokenEndpoints).toEqual({ linear: 'http://127.0.0.1:1/token' });
    expect(config.builtinVendorClients).toEqual({ linear: { clientId: 'id', clientSecret: 'secret' } });
  });

  it('refuses malformed entries naming the entry, never echoing a secret', () => {
    for (const bad of ['github', '=http://x', 'GitHub=http://x', 'github=not a url'])
      expect(() => parseBuiltinTokenEndpoints(bad)).toThrow(/BUILTIN_TOKEN_ENDPOINTS entry 1/);
    for (const bad of ['github', 'github=', 'github=:topsecret', 'github=id:', 'GitHub=id:topsecret']) {
      expect(() => parseBuiltinVendorClients(`linear=ok,${bad}`)).toThrow(/BUILTIN_VENDOR_CLIENTS entry 2 must be/);
      expect(() => parseBuiltinVendorClients(bad)).not.toThrow(/topsecret/);
    }
  });
});
