import { ACTION_MAP, ACTION_TYPES, type Rule } from '@mcpx/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiClient } from '../support/api-client.js';
import { RegistryHarness } from '../support/registry-harness.js';

/** A value of another type than the rule's schema says: a number for a string or a name, a string for the rest. */
function wrongValue(rule: Rule<unknown>): unknown {
  const s = rule.schema ?? {};
  const $ref = typeof s.$ref === 'string' ? s.$ref : '';
  if (s.type === 'string' || Array.isArray(s.enum) || $ref.endsWith('/Role')) return 12345;
  return 'not-of-this-type';
}

/**
 * Every action reaches its handler decoded by its table (ACTION_MAP): table-driven over every
 * field of every action's request, against the real registry. A wrong-typed field is
 * `invalid_input` naming it (or, when a required field comes before it in the table and is
 * absent, naming that one), a field the table does not name is refused by name, and nothing is
 * written.
 */
describe('every action is decoded by its table before its handler runs', () => {
  let h: RegistryHarness;
  let api: ApiClient;

  beforeAll(async () => {
    // Hundreds of refused requests from one signer: its rate limits are not what is tested here.
    h = await RegistryHarness.start({ env: { RATE_ACTIONS_PER_SIGNER: '0', RATE_ACTIONS_PER_ADDRESS: '0' } });
    api = h.api();
    await api.act('CreateAgent', { name: 'helper', definition: { mcpServers: [] } });
  });
  afterAll(async () => {
    await h?.stop();
  });

  const refusal = async (fields: Record<string, unknown>): Promise<{ status: number; code: string; field: string }> => {
    const { status, body } = await api.raw(api.envelope(fields as { type: string }));
    return { status, code: body.error?.code, field: body.error?.details?.field };
  };

  it('a wrong-typed field is refused naming it, for every field of every action; nothing is written', async () => {
    const before = await h.settledDigest(api.principal);
    let fieldsTried = 0;
    for (const type of ACTION_TYPES) {
      const table = ACTION_MAP[type].request as Record<string, Rule<unknown>>;
      let firstRequired: string | undefined;
      for (const [field, rule] of Object.entries(table)) {
        const expected = firstRequired ?? field;
        const got = await refusal({ type, [field]: wrongValue(rule) });
        expect(got, `${type}.${field}`).toEqual({ status: 400, code: 'invalid_input', field: expected });
        fieldsTried += 1;
        if (firstRequired === undefined && rule.absent !== true) firstRequired = field;
      }
    }
    expect(fieldsTried).toBeGreaterThan(80);
    expect(await h.tableDigest(api.principal)).toEqual(before);
  });

  it('a field the table does not name is refused by name, for every action', async () => {
    for (const type of ACTION_TYPES) {
      const got = await refusal({ type, noSuchField: 1 });
      expect(got, type).toEqual({ status: 400, code: 'invalid_input', field: 'noSuchField' });
    }
  });

  it('a nested wrong-typed field is named by its path', async () => {
    expect(await refusal({ type: 'CreateAgent', name: 'x', definition: { mcpServers: ['a', 7] } })).toEqual({
      status: 400,
      code: 'invalid_input',
      field: 'definition.mcpServers[1]',
    });
    expect(
      await refusal({ type: 'SetMcpServer', name: 'x', config: { url: 'https://a.example', headers: { 'X-A': 1 } } }),
    ).toEqual({ status: 400, code: 'invalid_input', field: 'config.headers.X-A' });
  });
});
