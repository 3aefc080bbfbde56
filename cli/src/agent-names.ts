import type { KeyPair } from '@mcpx/envelope';
import { act, type CliEnv } from './client.js';

/** More distinct agents than this in one list are shown by id: one look-up each would not pay. */
const MAX_LOOKUPS = 20;

/**
 * The names of the agents a list of waiting calls names (approvals, input requests carry the
 * agent's id): a person reads `agent deployer`, not `agent 3f2a…`. One `GetAgent` per distinct
 * agent, at once; an agent that cannot be read (deleted since, or beyond the bound) keeps its id.
 */
export async function agentNames(env: CliEnv, key: KeyPair, ids: readonly string[]): Promise<Map<string, string>> {
  const distinct = [...new Set(ids)].slice(0, MAX_LOOKUPS);
  const found = await Promise.all(
    distinct.map((id) =>
      act(env, key, 'GetAgent', { agent: id }).then(
        (res) => [id, res.agent.name] as const,
        () => undefined,
      ),
    ),
  );
  return new Map(found.filter((f) => f !== undefined));
}

/**
 * A list of waiting calls as a person reads it: `empty` when there are none, else `line` of each,
 * its agent named (the names are looked up first, so the text is ready when it is printed).
 */
export async function waitingCallsText<T extends { agent: string }>(
  env: CliEnv,
  key: KeyPair,
  items: readonly T[],
  empty: string,
  line: (item: T, names: ReadonlyMap<string, string>) => string,
): Promise<() => string> {
  const names = await agentNames(
    env,
    key,
    items.map((i) => i.agent),
  );
  return () => (items.length === 0 ? empty : items.map((i) => line(i, names)).join('\n'));
}
