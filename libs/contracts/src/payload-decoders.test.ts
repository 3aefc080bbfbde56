import { describe, expect, it } from 'vitest';
import { encodePayload } from './codec.js';
import { anyStr, int, list, mapOf, oneOf, optional, shape, str } from './field-rules.js';
import {
  decodeAgentToolsChangedEvent,
  decodeCallProgress,
  decodeServerDiscoveredEvent,
  decodeToolsObserved,
  oauthRefreshAnswerValue,
} from './payload-decoders.js';
import { agentToolsReplyValue, lambdaToolReplyValue } from './reply-decoders.js';

import { refusedField } from './refused-field.test-support.js';

const discovered = {
  account: 'acct',
  server: 'github',
  serverId: 's1',
  generation: 3,
  tools: [
    {
      name: 'create_issue',
      description: 'Open an issue.',
      inputSchema: { type: 'object' },
      annotations: { destructiveHint: 'yes', custom: 1 },
    },
  ],
  status: {
    state: 'ok',
    checkedAt: '2026-12-01T00:00:00Z',
    transport: 'http',
    heldTools: [{ name: 'x', cid: 'bafy', reason: 'held_for_review', state: 'pending', withheld: true }],
  },
  toolsChanged: true,
};

describe('field rules', () => {
  it('a table builds a new value of its checked fields; absent optional fields stay absent', () => {
    const rule = shape({ a: str, b: optional(int), c: list(oneOf('x', 'y')), d: mapOf(anyStr) });
    expect(rule({ a: 'v', c: ['x'], d: { k: '' }, extra: 'dropped' }, '')).toEqual({ a: 'v', c: ['x'], d: { k: '' } });
    expect(Object.keys(rule({ a: 'v', c: [], d: {} }, ''))).toEqual(['a', 'c', 'd']);
  });

  it('a refusal names the field by its path', () => {
    const rule = shape({ outer: shape({ items: list(shape({ name: str })), byKey: mapOf(int) }) });
    expect(refusedField(() => rule({ outer: { items: [{ name: 'a' }, { name: '' }], byKey: {} } }, ''))).toBe(
      'outer.items[1].name',
    );
    expect(refusedField(() => rule({ outer: { items: [], byKey: { k: 1.5 } } }, ''))).toBe('outer.byKey.k');
    expect(refusedField(() => rule({ outer: [] }, ''))).toBe('outer');
    expect(refusedField(() => rule('x', ''))).toBe('payload');
  });
});

describe('payload decoders: every field checked, nothing unchecked passed on', () => {
  it('a discovered event decodes whole; a tool keeps its schemas and annotations as sent (its CID is computed over them)', () => {
    const e = decodeServerDiscoveredEvent(encodePayload({ ...discovered, forged: '<script>' }));
    expect(e).toEqual(discovered);
    expect(e).not.toHaveProperty('forged');
  });

  it('a malformed field of the status, the held tools or the overrides is refused by name', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ status: { state: 'fine' } }, 'status.state'],
      [{ status: { state: 'ok', failures: '2' } }, 'status.failures'],
      [{ status: { state: 'ok', transport: 'ws' } }, 'status.transport'],
      [
        {
          status: {
            state: 'ok',
            heldTools: [{ name: 'x', cid: 'c', reason: 'held_for_review', state: 'pending', withheld: 'no' }],
          },
        },
        'status.heldTools[0].withheld',
      ],
      [{ status: { state: 'ok', skippedTools: [{ name: 'x' }] } }, 'status.skippedTools[0].reason'],
      [{ overrides: { create_issue: 'sometimes' } }, 'overrides.create_issue'],
      [{ held: [{ name: '', cid: 'c' }] }, 'held[0].name'],
      [{ tools: [{ name: 'a', annotations: ['readOnlyHint'] }] }, 'tools[0].annotations'],
      [{ tools: [{ name: 'a', title: 7 }] }, 'tools[0].title'],
      [{ generation: 1.5 }, 'generation'],
    ];
    for (const [patch, field] of cases)
      expect({
        patch,
        field: refusedField(() => decodeServerDiscoveredEvent(encodePayload({ ...discovered, ...patch }))),
      }).toEqual({ patch, field });
  });

  it('a quiet discovery keeps its verdict for the registry to check, and its auth context only as a string', () => {
    const observed = {
      account: 'acct',
      server: 'github',
      tools: [],
      transport: 'sse',
      verdict: { era: 'modern' },
      authContext: 'ab12',
    };
    expect(decodeToolsObserved(encodePayload(observed))).toEqual(observed);
    expect(refusedField(() => decodeToolsObserved(encodePayload({ ...observed, authContext: 1 })))).toBe('authContext');
  });

  it("a call's progress: finite numbers, a bounded message, nothing else kept", () => {
    expect(decodeCallProgress(encodePayload({ progress: 2, total: 5, message: 'two', extra: 'x' }))).toEqual({
      progress: 2,
      total: 5,
      message: 'two',
    });
    expect(decodeCallProgress(encodePayload({ progress: 0.5 }))).toEqual({ progress: 0.5 });
    expect(refusedField(() => decodeCallProgress(encodePayload({ progress: '1' })))).toBe('progress');
    expect(refusedField(() => decodeCallProgress(encodePayload({ progress: 1, total: 'x' })))).toBe('total');
    expect(refusedField(() => decodeCallProgress(encodePayload({ progress: 1, message: 'm'.repeat(1025) })))).toBe(
      'message',
    );
  });

  it("an agent's tool change: its maps of CIDs hold strings only", () => {
    const event = { account: 'a', agent: 'g', version: 2, added: { t: 'bafy' }, changed: {}, removed: ['old'] };
    expect(decodeAgentToolsChangedEvent(encodePayload(event))).toEqual(event);
    expect(refusedField(() => decodeAgentToolsChangedEvent(encodePayload({ ...event, added: { t: 1 } })))).toBe(
      'added.t',
    );
  });

  it('the OAuth refresh answer: the two answers it knows, never an authorization URL', () => {
    expect(oauthRefreshAnswerValue({ state: 'authorized', extra: 1 }, 'value')).toEqual({ state: 'authorized' });
    expect(
      oauthRefreshAnswerValue(
        { state: 'auth_required', authorizationUrl: 'https://as.example/authorize?x', vendor: 'github' },
        'value',
      ),
    ).toEqual({ state: 'auth_required', vendor: 'github' });
    expect(refusedField(() => oauthRefreshAnswerValue({ state: 'maybe' }, 'value'))).toBe('value.state');
    expect(refusedField(() => oauthRefreshAnswerValue({ state: 'auth_required', vendor: '' }, 'value'))).toBe(
      'value.vendor',
    );
  });

  it("the projector's reply values: documents kept whole (their CID covers every field), every checked field named", () => {
    const doc = {
      kind: 'mcp',
      name: 'gh__x',
      description: 'd',
      inputSchema: { type: 'object' },
      permission: 'act',
      server: 'gh',
      remoteName: 'x',
      cid: 'bafy',
      futureField: { a: 1 },
    };
    const reply = { version: 1, documents: [doc], conflicts: [] };
    expect(agentToolsReplyValue(reply, 'value')).toEqual(reply);
    expect(
      refusedField(() => agentToolsReplyValue({ ...reply, documents: [{ ...doc, permission: 'maybe' }] }, 'value')),
    ).toBe('value.documents[0].permission');
    expect(
      refusedField(() =>
        agentToolsReplyValue({ ...reply, documents: [{ ...doc, inputSchema: { bytes: new Uint8Array(1) } }] }, 'value'),
      ),
    ).toBe('value.documents[0].inputSchema');
    expect(lambdaToolReplyValue({ name: 'l', version: 2 }, 'value')).toEqual({ name: 'l', version: 2 });
    expect(refusedField(() => lambdaToolReplyValue({ name: 'l', version: '2' }, 'value'))).toBe('value.version');
  });
});
