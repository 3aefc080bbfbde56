import { describe, expect, it } from 'vitest';
import { busConnection, DEFAULT_TASK_SETTINGS, loadConfig } from './config.js';
import { ConfigError } from './config-error.js';

describe('loadConfig', () => {
  it('reads a zero duration as its default, as an unset one, and refuses a negative one', () => {
    const config = loadConfig('projector', { TASK_LEASE_MS: '0', TASK_POLL_MIN_MS: '', TASK_POLL_MAX_MS: '9000' });
    expect(config.proxy.tasks).toMatchObject({
      leaseMs: DEFAULT_TASK_SETTINGS.leaseMs,
      pollMinMs: DEFAULT_TASK_SETTINGS.pollMinMs,
      pollMaxMs: 9_000,
    });
    expect(() => loadConfig('projector', { APPROVAL_TTL_MS: '-1' })).toThrow(ConfigError);
  });

  it("names the bus connection: URL, prefix, and the service's credentials with their inbox prefix when set", () => {
    const anonymous = loadConfig('projector', { NATS_URL: 'nats://127.0.0.1:4333', NATS_PREFIX: 't1' });
    expect(busConnection(anonymous)).toEqual({ url: 'nats://127.0.0.1:4333', prefix: 't1' });
    const user = loadConfig('projector', { NATS_USER: 'projector', NATS_PASSWORD: 'pw' });
    expect(busConnection(user).credentials).toEqual({ user: 'projector', pass: 'pw', inboxPrefix: '_INBOX_projector' });
  });
});
