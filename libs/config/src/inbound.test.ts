import { describe, expect, it } from 'vitest';
import { ConfigError } from './config-error.js';
import { DEFAULT_INBOUND_LIMITS, inboundLimits } from './inbound.js';

describe('inbound limits', () => {
  it('are the defaults, with a face its own defaults, and each variable of the prefix taken', () => {
    expect(inboundLimits({}, 'ENDPOINT')).toEqual(DEFAULT_INBOUND_LIMITS);
    expect(inboundLimits({}, 'ENDPOINT', { keepAliveTimeoutMs: 65_000 }).keepAliveTimeoutMs).toBe(65_000);
    const env = {
      REGISTRY_BODY_TIMEOUT_MS: '2000',
      REGISTRY_BODY_BUDGET_BYTES: '1048576',
      REGISTRY_CONNECTIONS_PER_ADDRESS: '0',
      ENDPOINT_BODY_TIMEOUT_MS: '9',
    };
    expect(inboundLimits(env, 'REGISTRY')).toMatchObject({
      bodyTimeoutMs: 2000,
      bodyBudgetBytes: 1048576,
      connectionsPerAddress: 0,
    });
  });

  it('refuse a malformed value naming the variable', () => {
    expect(() => inboundLimits({ ENDPOINT_BODY_TIMEOUT_MS: '9' }, 'ENDPOINT')).toThrow(ConfigError);
    expect(() => inboundLimits({ ENDPOINT_BODY_BUDGET_BYTES: '1k' }, 'ENDPOINT')).toThrow('ENDPOINT_BODY_BUDGET_BYTES');
    expect(() => inboundLimits({ REGISTRY_CONNECTIONS_PER_ADDRESS: '-1' }, 'REGISTRY')).toThrow(
      'REGISTRY_CONNECTIONS_PER_ADDRESS',
    );
  });
});
