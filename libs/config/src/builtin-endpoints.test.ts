import { describe, expect, it } from 'vitest';
import { loadConfig, parseBuiltinEndpoints } from './config.js';

describe('BUILTIN_ENDPOINTS', () => {
  it('parses slug=url pairs and defaults to none', () => {
    expect(parseBuiltinEndpoints(undefined)).toEqual({});
    expect(parseBuiltinEndpoints('github=http://127.0.0.1:5000/mcp, linear=https://x.example/mcp?a=b')).toEqual({
      github: 'http://127.0.0.1:5000/mcp',
      linear: 'https://x.example/mcp?a=b',
    });
    expect(
      loadConfig('proxy', { OUTBOUND_PROFILE: 'local', BUILTIN_ENDPOINTS: 'github=http://127.0.0.1:1/mcp' })
        .builtinEndpoints,
    ).toEqual({ github: 'http://127.0.0.1:1/mcp' });
  });

  it('refuses malformed entries, naming the entry', () => {
    for (const bad of ['github', '=http://x', 'GitHub=http://x', 'github=not a url'])
      expect(() => parseBuiltinEndpoints(bad)).toThrow(/BUILTIN_ENDPOINTS entry 1/);
  });
});
