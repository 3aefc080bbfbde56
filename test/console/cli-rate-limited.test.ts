import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnvFor, runCli } from '../support/cli.js';
import { ProxySystem } from '../support/proxy-system.js';

/**
 * A command refused for its signer's rate (`rate_limited`: nothing ran, and when to come back)
 * waits the time the refusal names and sends the action again, as the console does: a script of
 * commands beside an open console, which share the owner's key and so its bucket, is not failed
 * for a burst. The registry here admits one action a second per signer.
 */
describe('mcpx under the signer rate', { timeout: 120_000 }, () => {
  let system: ProxySystem;
  let env: Record<string, string>;

  beforeAll(async () => {
    system = await ProxySystem.start({
      proxies: 0,
      env: { RATE_ACTIONS_PER_SIGNER: '1', RATE_ACTIONS_PER_SIGNER_BURST: '1' },
    });
    ({ env } = cliEnvFor(system.api));
  });

  afterAll(async () => {
    await system?.stop();
  });

  it('a command whose action finds the bucket empty waits the named time and runs', async () => {
    // The owner's other client (here the test's) takes the one action the bucket holds.
    await system.api.act('ListAgents');
    const refused = await system.api.raw(system.api.envelope({ type: 'ListAgents' }));
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');

    const listed = await runCli(['agents', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).not.toContain('too many actions');
    expect(JSON.parse(listed.stdout)).toEqual(expect.objectContaining({ agents: [] }));
  });
});
