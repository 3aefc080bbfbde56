import { describe, expect, it } from 'vitest';
import {
  BUILTIN_SERVERS,
  builtinEndpoint,
  builtinServerId,
  builtinsOfVendor,
  findBuiltin,
  findVendor,
  isBuiltinServerId,
  parseBuiltinServerId,
  vendorTokenEndpoint,
} from './builtin-catalog.js';
import { buildToolDocuments } from './document.js';
import { validateServerName } from './names.js';
import { ToolNameStyle } from './types.js';

describe('built-in catalog', () => {
  it('ships valid descriptors: slugs valid in both styles, https endpoints, buildable fallback lists', () => {
    expect([...BUILTIN_SERVERS.keys()].sort()).toEqual(['github', 'linear']);
    for (const b of BUILTIN_SERVERS.values()) {
      expect(validateServerName(b.slug, ToolNameStyle.double_underscore)).toBeNull();
      expect(validateServerName(b.slug, ToolNameStyle.prefixed)).toBeNull();
      expect(new URL(b.endpoint).protocol).toBe('https:');
      expect(b.fallbackTools.length).toBeGreaterThan(0);
      const docs = buildToolDocuments(b.slug, [...b.fallbackTools], { style: ToolNameStyle.prefixed, builtin: true });
      expect(docs.map((d) => d.name)).toEqual(b.fallbackTools.map((t) => `mcp_${b.slug}_${t.name}`));
    }
  });

  it('finds by slug and vendor, overrides endpoints, and marks its ids', () => {
    const gh = findBuiltin('github')!;
    expect(findBuiltin('acme')).toBeUndefined();
    expect(builtinsOfVendor('linear').map((b) => b.slug)).toEqual(['linear']);
    expect(builtinEndpoint(gh, {})).toBe(gh.endpoint);
    expect(builtinEndpoint(gh, { github: 'http://127.0.0.1:1/mcp' })).toBe('http://127.0.0.1:1/mcp');
    expect(builtinEndpoint(gh, { linear: 'http://127.0.0.1:1/mcp' })).toBe(gh.endpoint);
    expect(builtinServerId('github', 'c1')).toBe('builtin:github:c1');
    expect(isBuiltinServerId('builtin:github:c1')).toBe(true);
    expect(isBuiltinServerId('0b6c8f1e-0000-4000-8000-000000000000')).toBe(false);
    expect(parseBuiltinServerId('builtin:github:c1')).toEqual({ slug: 'github', connectionId: 'c1' });
    expect(parseBuiltinServerId('0b6c8f1e-0000-4000-8000-000000000000')).toBeUndefined();
    expect(parseBuiltinServerId('builtin:github:')).toBeUndefined();
  });

  it('describes every vendor a built-in borrows from, with an https token endpoint the operator may override', () => {
    for (const b of BUILTIN_SERVERS.values()) {
      const vendor = findVendor(b.vendor)!;
      expect(new URL(vendor.tokenEndpoint).protocol).toBe('https:');
      expect(vendorTokenEndpoint(vendor, {})).toBe(vendor.tokenEndpoint);
      expect(vendorTokenEndpoint(vendor, { [b.vendor]: 'http://127.0.0.1:1/token' })).toBe('http://127.0.0.1:1/token');
    }
    expect(findVendor('acme')).toBeUndefined();
  });
});
