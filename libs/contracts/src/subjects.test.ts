import { describe, expect, it } from 'vitest';
import { makeSubjects } from './subjects.js';

/** Tokens at the edges of the grammar: one character, the longest, every kind of character. */
const tokens = ['a', 'Z', '0', '_', '-', 'acct_01-X', 'x'.repeat(128), 'ed25519-ABCdef_123'];

describe('subject parsers beside their builders', () => {
  for (const prefix of ['', 't1.']) {
    const s = makeSubjects(prefix);

    it(`round trip builder → parser (prefix ${JSON.stringify(prefix)})`, () => {
      for (const account of tokens) {
        for (const name of tokens) {
          expect(s.parseServerEvent(s.serverDiscovered(account, name))).toEqual({
            kind: 'discovered',
            account,
            server: name,
          });
          expect(s.parseServerEvent(s.serverDeleted(account, name))).toEqual({
            kind: 'deleted',
            account,
            server: name,
          });
          expect(s.parseAgentChanged(s.agentChanged(account, name))).toEqual({ account, agent: name });
          expect(s.parseAgentToolsChanged(s.agentToolsChanged(account, name))).toEqual({ account, agent: name });
          expect(s.parseApprovalEvent(s.approvalRequested(account))).toEqual({ kind: 'requested', account });
          expect(s.parseApprovalEvent(s.approvalDecided(account))).toEqual({ kind: 'decided', account });
          expect(s.parseInputEvent(s.inputRequested(account))).toEqual({ kind: 'requested', account });
          expect(s.parseInputEvent(s.inputAnswered(account))).toEqual({ kind: 'answered', account });
        }
        expect(s.parseEndpointAnswer(s.endpointAnswer(account))).toEqual({ instance: account });
      }
    });
  }

  it('hostile subjects parse to null: extra or missing tokens, wildcards, empty tokens, another kind or prefix', () => {
    const s = makeSubjects('t1.');
    const hostile = [
      't1.mcp.events.server.discovered.acct.srv.extra',
      't1.mcp.events.server.discovered.acct',
      't1.mcp.events.server.discovered.acct.*',
      't1.mcp.events.server.discovered.acct.>',
      't1.mcp.events.server.discovered..srv',
      't1.mcp.events.server.renamed.acct.srv',
      'mcp.events.server.discovered.acct.srv',
      't2.mcp.events.server.discovered.acct.srv',
      't1.mcp.events.server.discovered.acct.sr v',
      '',
    ];
    for (const subject of hostile)
      expect({ subject, parsed: s.parseServerEvent(subject) }).toEqual({ subject, parsed: null });
    expect(s.parseAgentToolsChanged('t1.agents.tools.changed.acct')).toBeNull();
    expect(s.parseAgentToolsChanged('t1.agents.tools.changed.acct.agent.x')).toBeNull();
    expect(s.parseAgentChanged('t1.mcp.events.agent.changed.acct.a%b')).toBeNull();
    expect(s.parseApprovalEvent('t1.mcp.approvals.approved.acct')).toBeNull();
    expect(s.parseApprovalEvent('t1.mcp.approvals.requested.acct.more')).toBeNull();
    expect(s.parseInputEvent('t1.mcp.inputs.*.acct')).toBeNull();
    expect(s.parseInputEvent('t1.mcp.inputs.requested.' + 'a'.repeat(129))).toBeNull();
    expect(s.parseEndpointAnswer(s.endpointClientsDeclared)).toBeNull();
    expect(s.parseEndpointAnswer('t1.mcp.endpoint.e-1.answer.x')).toBeNull();
    expect(s.parseEndpointAnswer('t1.mcp.endpoint.*.answer')).toBeNull();
    expect(s.parseEndpointAnswer('mcp.endpoint.e-1.answer')).toBeNull();
  });

  it("the endpoint's subjects: an instance must be one token; the registry's audit subject is fixed", () => {
    const s = makeSubjects('t1.');
    expect(s.endpointAnswer('endpoint-1')).toBe('t1.mcp.endpoint.endpoint-1.answer');
    expect(s.endpointClientsDeclared).toBe('t1.mcp.endpoint.clients.declared');
    expect(s.registryTokenDecisionAudit).toBe('t1.registry.approvals.token-decided');
    for (const bad of ['a.b', '*', '>', '', 'x'.repeat(129)]) expect(() => s.endpointAnswer(bad)).toThrow();
  });

  it("a call's progress subject: account, run and call id, each one token", () => {
    const s = makeSubjects('t1.');
    expect(s.callProgress('acct', 'run-1', 'call_1')).toBe('t1.mcp.calls.progress.acct.run-1.call_1');
    for (const bad of ['a.b', '*', '>', '']) expect(() => s.callProgress('acct', 'run', bad)).toThrow();
  });

  it("an account's server events: a wildcard the parser's subjects fall under", () => {
    const s = makeSubjects();
    expect(s.serverEventsOf('acct')).toBe('mcp.events.server.*.acct.*');
    expect(() => s.serverEventsOf('a.b')).toThrow();
  });
});
