import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';
import { ConfigError } from './config-error.js';

const local = { OUTBOUND_PROFILE: 'local' };

describe('INTERNAL_HTTP_PORT and INTERNAL_HTTP_HOST', () => {
  it('default to a fixed port per service on loopback, or a free port when HTTP_PORT is 0', () => {
    expect(loadConfig('registry', local)).toMatchObject({
      httpPort: 8080,
      internalHttpPort: 9080,
      internalHttpHost: '127.0.0.1',
    });
    expect(loadConfig('projector', local).internalHttpPort).toBe(9081);
    expect(loadConfig('proxy', { ...local, INTERNAL_HTTP_PORT: '' }).internalHttpPort).toBe(9082);
    expect(loadConfig('proxy', { ...local, HTTP_PORT: '0' }).internalHttpPort).toBe(0);
    expect(
      loadConfig('proxy', { ...local, HTTP_PORT: '0', INTERNAL_HTTP_PORT: '9999', INTERNAL_HTTP_HOST: '0.0.0.0' }),
    ).toMatchObject({ internalHttpPort: 9999, internalHttpHost: '0.0.0.0' });
  });

  it('refuse a malformed port, or the public port itself, naming the setting', () => {
    for (const env of [
      { INTERNAL_HTTP_PORT: 'x' },
      { INTERNAL_HTTP_PORT: '70000' },
      { INTERNAL_HTTP_PORT: '1.5' },
      { HTTP_PORT: '8100', INTERNAL_HTTP_PORT: '8100' },
    ]) {
      expect(() => loadConfig('registry', { ...local, ...env })).toThrow(ConfigError);
      expect(() => loadConfig('registry', { ...local, ...env })).toThrow(/^INTERNAL_HTTP_PORT must/);
    }
  });
});
