import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileValidator, type JsonObject } from '@mcpx/domain';
import {
  CALL_REQUEST_LIMITS,
  MAX_CALL_TIMEOUT_MS,
  MAX_REQUEST_BYTES,
  StrictRules,
  decodeCallRequest,
  encodePayload,
  parseCallRequest,
} from '@mcpx/contracts';
import { chainTool, startTestMcpServer, type TestMcpServer, type TestTool } from '../servers/index.js';
import { ProxySystem } from '../support/proxy-system.js';

/** Hostile schemas and arguments: every case ends with an answer, bounded in work, never a hang or a crash. */
describe('the bounded validator on the proxy hot path', () => {
  it('compiles a schema nested 10,000 levels deep, checks a value 64 levels down and lets the deeper part through', () => {
    let schema: JsonObject = { type: 'string' };
    for (let i = 0; i < 10_000; i++) schema = { type: 'object', properties: { a: schema } };
    const validate = compileValidator(schema);
    const nest = (levels: number, leaf: unknown): unknown => {
      let value = leaf;
      for (let i = 0; i < levels; i++) value = { a: value };
      return value;
    };
    expect(validate(nest(70, 1))).toEqual({
      ok: true,
      partial: `${'/a'.repeat(65)}: the arguments nest deeper than 64 levels`,
    });
    const result = validate(nest(40, 1));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors[0]?.keyword).toBe('type');
  });

  it('handles an enum of 200,000 values and a schema with 200,000 properties', () => {
    const values = Array.from({ length: 200_000 }, (_, i) => `v${i}`);
    const e = compileValidator({ type: 'object', properties: { pick: { enum: values } } });
    expect(e({ pick: 'v199999' }).ok).toBe(true);
    const bad = e({ pick: 'nope' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors[0]?.message.length).toBeLessThan(300);
    const properties = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`p${i}`, { type: 'number' }]));
    expect(compileValidator({ type: 'object', properties })({ p5: 'x' }).ok).toBe(false);
  });

  it('stops at the node budget on a 200,000-item array (the rest let through), and refuses at the size bound on a huge string', () => {
    const v = compileValidator({ type: 'object', properties: { xs: { type: 'array', items: { type: 'number' } } } });
    const many = v({ xs: Array.from({ length: 200_000 }, () => 1) });
    expect(many).toEqual({ ok: true, partial: '/xs/9998: more than 10000 units of validation work' });
    const big = v({ s: 'x'.repeat(2 * 1024 * 1024) });
    expect(big.ok).toBe(false);
    if (!big.ok) expect(big.errors[0]?.keyword).toBe('size');
    const errors = compileValidator({
      type: 'object',
      properties: { xs: { type: 'array', items: { type: 'string' } } },
    })({ xs: Array.from({ length: 5_000 }, () => 1) });
    expect(errors.ok).toBe(false);
    if (!errors.ok) expect(errors.errors.length).toBeLessThanOrEqual(20);
  });

  it('ignores keywords it does not model, unresolvable $refs and a non-object root', () => {
    expect(
      compileValidator({ type: 'object', anyOf: [{ required: ['a'] }, {}], $ref: '#/nope', pattern: '(a+)+$' })({}).ok,
    ).toBe(true);
    expect(compileValidator(true)({ anything: 1 }).ok).toBe(true);
  });
});

/** An order form built from `$defs`, as 2026-07-28 servers write them. */
const orderTool: TestTool = {
  name: 'order',
  inputSchema: {
    type: 'object',
    properties: {
      lines: { type: 'array', minItems: 1, items: { $ref: '#/$defs/line' } },
      delivery: { oneOf: [{ $ref: '#/$defs/pickup' }, { $ref: '#/$defs/address' }] },
    },
    required: ['lines'],
    $defs: {
      line: {
        type: 'object',
        properties: { sku: { type: 'string', minLength: 1 }, qty: { type: 'integer', minimum: 1 } },
        required: ['sku', 'qty'],
      },
      pickup: {
        type: 'object',
        properties: { store: { const: 'main' } },
        required: ['store'],
        additionalProperties: false,
      },
      address: {
        type: 'object',
        properties: { street: { type: 'string' } },
        required: ['street'],
        additionalProperties: false,
      },
    },
  },
  handler: (args) => ({ content: [{ type: 'text', text: `ordered ${(args.lines as unknown[]).length} lines` }] }),
};

describe('$ref schemas through the real proxy', () => {
  let system: ProxySystem;
  let upstream: TestMcpServer;

  beforeAll(async () => {
    [system, upstream] = await Promise.all([
      ProxySystem.start(),
      startTestMcpServer({ tools: [orderTool, chainTool('chain', 200), chainTool('deep_chain', 10_000)] }),
    ]);
    await system.setServer('shop', upstream.url);
    await system.createAgent('agent', ['shop'], 3);
  });

  afterAll(async () => {
    await system?.stop();
    await upstream?.close();
  });

  it('validates arguments through $defs and answers a miss with the schema whole (touch-expand), calling nothing', async () => {
    const ok = await system.call('agent', 'r1', 'shop__order', {
      lines: [{ sku: 'a1', qty: 2 }],
      delivery: { store: 'main' },
    });
    expect(ok.result.text).toBe('ordered 1 lines');
    const before = upstream.stats.calls;
    const err = await system.callError('agent', 'r1', 'shop__order', {
      lines: [{ sku: 'a1', qty: 0 }, { qty: 1 }],
      delivery: { store: 'main', street: 'x' },
    });
    expect(err.code).toBe('invalid_arguments');
    expect(err.details.errors).toEqual([
      expect.objectContaining({ path: '/lines/0/qty', keyword: 'minimum' }),
      expect.objectContaining({ path: '/lines/1/sku', keyword: 'required' }),
      expect.objectContaining({ path: '/delivery', keyword: 'oneOf' }),
    ]);
    expect(err.details.contract).toEqual({ name: 'shop__order', description: '', inputSchema: orderTool.inputSchema });
    expect(upstream.stats.calls).toBe(before);
  });

  it('keeps a 200-deep and a 10,000-deep $ref chain (nothing skipped) and calls them: the part past the bounds is left to the server', async () => {
    const { servers } = await system.api.act<{
      servers: { name: string; status: { state: string; skippedTools?: unknown[] } }[];
    }>('ListMcpServers', {});
    const shop = servers.find((s) => s.name === 'shop');
    expect(shop?.status.state).toBe('ok');
    expect(shop?.status.skippedTools).toBeUndefined();
    const before = upstream.stats.calls;
    for (const tool of ['shop__chain', 'shop__deep_chain']) {
      expect((await system.call('agent', 'r3', tool, { a: 'x' })).result.text).toBe(
        `${tool.slice('shop__'.length)} ran`,
      );
      // Past 64 $refs in a row the validator cannot judge `a`: the server decides, not the connector.
      expect((await system.call('agent', 'r3', tool, { a: 1 })).result.text).toBe(`${tool.slice('shop__'.length)} ran`);
    }
    expect(upstream.stats.calls).toBe(before + 4);
    expect((await system.call('agent', 'r3', 'shop__order', { lines: [{ sku: 'c', qty: 3 }] })).result.text).toBe(
      'ordered 1 lines',
    );
  });
});

describe('call request decoding', () => {
  const base = { account: 'a', agent: 'b', run: 'r', callId: 'c', tool: 't', arguments: {} };

  it('clamps timeoutMs to the 120 s maximum', () => {
    expect(parseCallRequest({ ...base, timeoutMs: 600_000 }).timeoutMs).toBe(MAX_CALL_TIMEOUT_MS);
    expect(parseCallRequest({ ...base, timeoutMs: 1_500 }).timeoutMs).toBe(1_500);
    expect(parseCallRequest(base).timeoutMs).toBeUndefined();
  });

  it('decodes with the strict decoder: deep nesting, oversize, tags and indefinite lengths are refused by rule, ordinary requests pass', () => {
    let deep: unknown = 1;
    for (let i = 0; i < CALL_REQUEST_LIMITS.maxDepth; i++) deep = { k: [deep] };
    const refusedBy = (bytes: Uint8Array): unknown => {
      try {
        decodeCallRequest(bytes);
        return 'decoded';
      } catch (e) {
        return e;
      }
    };
    expect(refusedBy(encodePayload({ ...base, arguments: { deep } }))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'arguments', rule: StrictRules.depth, limit: CALL_REQUEST_LIMITS.maxDepth },
    });
    expect(refusedBy(encodePayload({ ...base, arguments: { s: 'y'.repeat(MAX_REQUEST_BYTES) } }))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'request', rule: StrictRules.size },
    });
    expect(refusedBy(Uint8Array.from([0xd8, 28, 0xa0]))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'request', rule: StrictRules.tag },
    });
    expect(refusedBy(Uint8Array.from([0xbf, 0xff]))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'request', rule: StrictRules.indefiniteLength },
    });
    expect(refusedBy(new Uint8Array(0))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'request', rule: StrictRules.empty },
    });
    expect(refusedBy(encodePayload({ ...base, tool: 7 }))).toMatchObject({
      code: 'invalid_input',
      details: { field: 'tool' },
    });
    const ordinary = { ...base, arguments: { a: [1, { b: 'x', c: [true, null] }], s: 'y'.repeat(70_000) } };
    expect(decodeCallRequest(encodePayload(ordinary))).toEqual(ordinary);
    expect(decodeCallRequest(encodePayload(base))).toEqual(base);
  });
});
