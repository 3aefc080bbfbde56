import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { DEFAULT_INBOUND_LIMITS } from './inbound.js';
import { parseInternalHttp } from './internal-http.js';
import { loadRegistrySettings } from './registry-settings.js';
import { integerSetting, nonNegativeNumberSetting, onOffSetting, portSetting } from './settings.js';

describe('the one settings parser', () => {
  it('an unset or empty variable is the default; a whole number in range is taken', () => {
    expect(integerSetting({}, 'N', { fallback: 7 })).toBe(7);
    expect(integerSetting({ N: '' }, 'N', { fallback: undefined })).toBeUndefined();
    expect(integerSetting({ N: '12' }, 'N', { fallback: 0, min: 1, max: 12 })).toBe(12);
    expect(portSetting({ P: '0' }, 'P', 80)).toBe(0);
    expect(nonNegativeNumberSetting({ R: '0.5' }, 'R', 1)).toBe(0.5);
    expect(onOffSetting({ F: 'off' }, 'F', true)).toBe(false);
  });

  it('refuses anything else with a ConfigError naming the variable, never its value', () => {
    for (const [raw, opts] of [
      ['1.5', {}],
      ['-1', {}],
      ['13', { max: 12 }],
      ['0', { min: 1 }],
      ['x9', {}],
      [String(2 ** 60), {}],
    ] as const) {
      let err: unknown;
      try {
        integerSetting({ N_SETTING: raw }, 'N_SETTING', { fallback: 0, ...opts });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).setting).toBe('N_SETTING');
      expect((err as Error).message).not.toContain(raw);
    }
    expect(() => portSetting({ P: '65536' }, 'P', 80)).toThrow('P must be a port number');
    expect(() => onOffSetting({ F: 'maybe' }, 'F', true)).toThrow('F must be on or off');
    expect(() => nonNegativeNumberSetting({ R: '-0.1' }, 'R', 1)).toThrow('R must be a non-negative number');
  });

  it("the registry's settings and the shared loader read through it", () => {
    expect(
      loadRegistrySettings({
        REGISTRY_REPROBE_BASE_MS: '250',
        REGISTRY_PUBLIC_URL: 'https://r.example/',
        REGISTRY_OAUTH_CLIENT_METADATA: 'off',
      }),
    ).toEqual({
      reprobeBaseMs: 250,
      publicUrl: 'https://r.example',
      clientMetadataDocument: false,
      endpoint: {},
      inbound: DEFAULT_INBOUND_LIMITS,
    });
    // The agent endpoint as the console shows it: its public URL, else its port on the page's host.
    expect(
      loadRegistrySettings({ ENDPOINT_PUBLIC_URL: 'https://mcp.example.com//', ENDPOINT_PORT: '18083' }).endpoint,
    ).toEqual({ publicUrl: 'https://mcp.example.com', port: 18083 });
    expect(() => loadRegistrySettings({ ENDPOINT_PUBLIC_URL: 'ftp://x' })).toThrow(
      'ENDPOINT_PUBLIC_URL must be an http(s) URL',
    );
    expect(() => loadRegistrySettings({ ENDPOINT_PORT: '0' })).toThrow('ENDPOINT_PORT must be a port (1-65535)');
    expect(loadRegistrySettings({ REGISTRY_BODY_TIMEOUT_MS: '2500' }).inbound.bodyTimeoutMs).toBe(2500);
    expect(() => loadRegistrySettings({ REGISTRY_DISCOVERY_CONCURRENCY: '0' })).toThrow(
      'REGISTRY_DISCOVERY_CONCURRENCY must be a positive integer',
    );
    expect(() => parseInternalHttp('proxy', { INTERNAL_HTTP_PORT: 'x' }, 80)).toThrow(
      'INTERNAL_HTTP_PORT must be a port number',
    );
    expect(parseInternalHttp('proxy', {}, 0).internalHttpPort).toBe(0);
  });
});
