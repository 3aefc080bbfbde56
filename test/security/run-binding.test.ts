/**
 * Attack: an AGENT signer (an agent runtime's key) ends runs that are not its agents' (SECURITY.md
 * "Known gaps": "an AGENT signer may end any run of its account"). Ending a run closes its
 * connections on every proxy instance: another agent's work in progress. An AGENT signer now ends
 * only a run whose every call through the registry was of an agent it is bound to; anything else
 * is forbidden on `run` and nothing is published. OWNER and WRITER signers end any run of the
 * account, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePayload, type RunEnded } from '@mcpx/contracts';
import { generateKeyPair } from '@mcpx/envelope';
import { echoTool, startTestMcpServer, type TestMcpServer } from '../servers/index.js';
import { ApiClient } from '../support/api-client.js';
import { ProxySystem } from '../support/proxy-system.js';
import { eventually } from '../support/system.js';

describe('an AGENT signer ends only the runs of its agents', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;
  let asAgent: ApiClient;
  let asWriter: ApiClient;
  const ended: string[] = [];

  beforeAll(async () => {
    [system, upstream] = await Promise.all([ProxySystem.start(), startTestMcpServer({ tools: [echoTool()] })]);
    await system.setServer('demo', upstream.url);
    await system.createAgent('mine', ['demo']);
    await system.createAgent('theirs', ['demo']);
    const agentKey = generateKeyPair();
    const writerKey = generateKeyPair();
    await system.api.act('AuthorizeSigner', { principal: agentKey.principal, role: 'AGENT', agents: ['mine'] });
    await system.api.act('AuthorizeSigner', { principal: writerKey.principal, role: 'WRITER' });
    asAgent = new ApiClient(system.api.apiUrl, agentKey, system.api.principal);
    asWriter = new ApiClient(system.api.apiUrl, writerKey, system.api.principal);
    system.nc.subscribe(system.subjects.runEndedAll, {
      callback: (err, msg) => void (err ?? ended.push(decodePayload<RunEnded>(msg.data).run)),
    });
    await system.nc.flush();
  });
  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  const invoke = (api: ApiClient, agent: string, run: string) =>
    api.act('InvokeTool', { agent, tool: 'demo__echo', arguments: { text: run }, run });

  it("refuses a run of another agent, a run it never carried and a mixed run; ends its own; the owner's and a WRITER's EndRun are unchanged", async () => {
    await invoke(system.api, 'theirs', 'run-theirs');
    await invoke(asAgent, 'mine', 'run-mine');
    // A run that carried calls of both agents is not only this signer's.
    await invoke(system.api, 'mine', 'run-mixed');
    await invoke(system.api, 'theirs', 'run-mixed');

    for (const run of ['run-theirs', 'run-mixed', 'run-never-seen']) {
      await expect(asAgent.act('EndRun', { run }), run).rejects.toMatchObject({
        code: 'forbidden',
        details: { field: 'run' },
      });
    }
    // A run of its own agent, even one the owner's key started.
    await invoke(system.api, 'mine', 'run-owner-started');
    expect(await asAgent.act('EndRun', { run: 'run-owner-started' })).toEqual({
      run: 'run-owner-started',
      ended: true,
    });
    expect(await asAgent.act('EndRun', { run: 'run-mine' })).toEqual({ run: 'run-mine', ended: true });
    await eventually(
      async () => (ended.includes('run-mine') && ended.includes('run-owner-started') ? true : undefined),
      10_000,
      'the ends',
    );
    // Ended and forgotten: ending it again is not this signer's to do.
    await expect(asAgent.act('EndRun', { run: 'run-mine' })).rejects.toMatchObject({ code: 'forbidden' });
    // Nothing was published for the refused ones.
    expect(ended.filter((r) => ['run-theirs', 'run-mixed', 'run-never-seen'].includes(r))).toEqual([]);
    // The refused run still works for its agent.
    expect((await invoke(system.api, 'theirs', 'run-theirs')).result.text).toBe('echo: run-theirs');

    expect(await asWriter.act('EndRun', { run: 'run-mixed' })).toEqual({ run: 'run-mixed', ended: true });
    expect(await system.api.act('EndRun', { run: 'run-theirs' })).toEqual({ run: 'run-theirs', ended: true });
    expect(await system.api.act('EndRun', { run: 'run-never-seen' })).toEqual({ run: 'run-never-seen', ended: true });
  });
});
