import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderComposeNatsConfig, renderHelmNatsAuthValues } from './nats-deploy-config.js';
import {
  NatsRoles,
  inboxPrefixOf,
  natsPermissions,
  renderNatsServerConfig,
  type NatsRole,
} from './nats-permissions.js';

/** NATS subject matching: `*` one token, `>` one or more trailing tokens. */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

const who = (kind: 'publish' | 'subscribe', subject: string, prefix = ''): NatsRole[] =>
  NatsRoles.filter((role) => natsPermissions(role, role, prefix)[kind].some((pattern) => matches(pattern, subject)));

describe('the NATS permission model (docs/bus.md#users)', () => {
  for (const prefix of ['', 't1.']) {
    it(`gives each subject to its owner only${prefix ? ' (under a prefix)' : ''}`, () => {
      const p = prefix;
      expect(who('publish', `${p}mcp.events.server.discovered.acct.demo`, prefix)).toEqual(['registry', 'operator']);
      expect(who('publish', `${p}mcp.events.agent.changed.acct.agent`, prefix)).toEqual(['registry', 'operator']);
      expect(who('publish', `${p}agents.tools.changed.acct.agent`, prefix)).toEqual(['projector', 'operator']);
      for (const s of [
        `${p}mcp.proxy.call`,
        `${p}mcp.proxy.proxy-1.call`,
        `${p}mcp.proxy.cancel`,
        `${p}mcp.proxy.calls.held`,
        `${p}mcp.runs.ended.acct.run`,
      ]) {
        expect(who('subscribe', s, prefix)).toEqual(['proxy', 'operator']);
      }
      expect(who('publish', `${p}mcp.proxy.call`, prefix)).toEqual(['registry', 'endpoint', 'runtime', 'operator']);
      expect(who('publish', `${p}mcp.proxy.cancel`, prefix)).toEqual(['endpoint', 'runtime', 'operator']);
      expect(who('publish', `${p}mcp.runs.ended.acct.run`, prefix)).toEqual([
        'registry',
        'endpoint',
        'runtime',
        'operator',
      ]);
      // A decision's notice: the registry (an owner's), the endpoint (a client's user's); never a runtime.
      expect(who('publish', `${p}mcp.approvals.decided.acct`, prefix)).toEqual(['registry', 'endpoint', 'operator']);
      expect(who('subscribe', `${p}mcp.approvals.decided.acct`, prefix)).toEqual(['registry', 'runtime', 'operator']);
      // Between the endpoint's instances only.
      for (const s of [`${p}mcp.endpoint.endpoint-1.answer`, `${p}mcp.endpoint.clients.declared`]) {
        expect(who('publish', s, prefix)).toEqual(['endpoint', 'operator']);
        expect(who('subscribe', s, prefix)).toEqual(['endpoint', 'operator']);
      }
      expect(who('publish', `${p}registry.oauth.refresh`, prefix)).toEqual(['proxy', 'operator']);
      expect(who('subscribe', `${p}registry.oauth.refresh`, prefix)).toEqual(['registry', 'operator']);
      // A token holder's decision to audit: asked by the endpoint only, answered by the registry only.
      expect(who('publish', `${p}registry.approvals.token-decided`, prefix)).toEqual(['endpoint', 'operator']);
      expect(who('subscribe', `${p}registry.approvals.token-decided`, prefix)).toEqual(['registry', 'operator']);
      expect(who('subscribe', `${p}agents.tools.changed.acct.agent`, prefix)).toEqual([
        'registry',
        'proxy',
        'endpoint',
        'runtime',
        'operator',
      ]);
      // A call's progress: told by the proxy running it only, heard by the callers (a runtime, the endpoint).
      expect(who('publish', `${p}mcp.calls.progress.acct.run.call`, prefix)).toEqual(['proxy', 'operator']);
      expect(who('subscribe', `${p}mcp.calls.progress.acct.run.call`, prefix)).toEqual([
        'endpoint',
        'runtime',
        'operator',
      ]);
      expect(who('subscribe', `${p}mcp.calls.progress.acct.run.call.more`, prefix)).toEqual(['operator']);
      // A call's log messages: told by the proxy running it only, heard by the endpoint (its client asked).
      expect(who('publish', `${p}mcp.calls.log.acct.run.call`, prefix)).toEqual(['proxy', 'operator']);
      expect(who('subscribe', `${p}mcp.calls.log.acct.run.call`, prefix)).toEqual(['endpoint', 'operator']);
    });
  }

  it('gives nobody but the operator `>`, the whole JetStream API or another user’s replies', () => {
    for (const role of NatsRoles.filter((r) => r !== 'operator')) {
      const perm = natsPermissions(role, role);
      for (const pattern of [...perm.publish, ...perm.subscribe]) {
        expect(pattern).not.toBe('>');
        expect(matches(pattern, '$JS.API.STREAM.DELETE.MCP_EVENTS')).toBe(false);
        expect(matches(pattern, '$JS.API.STREAM.UPDATE.MCP_EVENTS')).toBe(false);
        expect(matches(pattern, '$JS.API.CONSUMER.DELETE.MCP_EVENTS.projector')).toBe(false);
      }
      for (const other of NatsRoles.filter((r) => r !== role))
        expect(perm.subscribe.some((s) => matches(s, `${inboxPrefixOf(other)}.abc.1`))).toBe(false);
      expect(perm.subscribe.some((s) => matches(s, `${inboxPrefixOf(role)}.abc.1`))).toBe(true);
    }
    // Only the repliers may answer requests.
    expect(NatsRoles.filter((r) => natsPermissions(r, r).allowResponses !== false)).toEqual([
      'registry',
      'projector',
      'proxy',
      'endpoint',
    ]);
  });

  it('renders a config without anonymous access, refusing short passwords and duplicate users', () => {
    const config = renderNatsServerConfig({
      users: [{ user: 'runtime', role: 'runtime', password: 'p'.repeat(24) }],
      host: '127.0.0.1',
      port: 4223,
      storeDir: '/tmp/js',
    });
    expect(config).toContain('authorization {');
    expect(config).not.toContain('no_auth_user');
    expect(() =>
      renderNatsServerConfig({
        users: [{ user: 'runtime', role: 'runtime', password: 'short' }],
        host: '127.0.0.1',
        port: 1,
        storeDir: '/x',
      }),
    ).toThrow('at least 16 characters');
    const twice = [
      { user: 'a', role: 'runtime' as const, password: 'p'.repeat(24) },
      { user: 'a', role: 'proxy' as const, password: 'q'.repeat(24) },
    ];
    expect(() => renderNatsServerConfig({ users: twice, host: '127.0.0.1', port: 1, storeDir: '/x' })).toThrow(
      'listed twice',
    );
    expect(() => inboxPrefixOf('a.b')).toThrow();
  });

  it('the compose and Helm files say exactly what the model says (run scripts/render-nats-config.ts after a change)', () => {
    const committed = (path: string): string => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
    expect(committed('deploy/nats/nats.conf')).toBe(renderComposeNatsConfig());
    expect(committed('deploy/nats-auth-values.yaml')).toBe(renderHelmNatsAuthValues());
    expect(renderComposeNatsConfig()).not.toMatch(/password: "/);
  });
});
