// `mcpx tools ls|index|show|search`: an agent's projected tools, and tools found by meaning.
import type { ActionResponse } from '@mcpx/contracts';
import { UsageError, flag, need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';

async function agentTools(env: CliEnv, args: ParsedArgs): Promise<ActionResponse<'ListAgentTools'>> {
  const agent = flag(args, 'agent');
  if (agent === undefined) throw new UsageError('--agent AGENT is required');
  return act(env, await readKey(env.keyFile), 'ListAgentTools', { agent });
}

export async function toolsLs(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const res = await agentTools(env, args);
  // Tools a pinned server holds for review are in no set: say so, and where to review them.
  const held = res.conflicts
    .filter((c) => c.heldBy === 'held_for_review')
    .map((c) => `held for review: ${c.name} (${c.server}): mcpx tools review ${c.server}`);
  print(res, () =>
    [
      res.tools.length === 0 ? 'no tools: grant a server with `mcpx agents grant AGENT SERVER`' : res.listing,
      ...held,
    ].join('\n'),
  );
}

export async function toolsIndex(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const res = await agentTools(env, args);
  print({ index: res.index }, () => res.index);
}

export async function toolsShow(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const name = need(args, 2, 'TOOL');
  const res = await agentTools(env, args);
  const doc = res.tools.find((t) => t.name === name);
  const held = res.conflicts.find((c) => c.name === name && c.heldBy === 'held_for_review');
  if (doc === undefined && held !== undefined)
    throw new Error(
      `held_for_review: ${name} waits for a review of its changed or new contract: mcpx tools review ${held.server}`,
    );
  if (doc === undefined) throw new Error(`not_found: no tool ${name} for this agent`);
  print(doc, () => JSON.stringify(doc, null, 2));
}

/** `tools search QUERY [--family mcp:SLUG] [--agent AGENT] [--limit N]`: words after `search` form the query. */
export async function toolsSearch(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const query = args.positionals.slice(2).join(' ');
  if (query.trim() === '') throw new UsageError('missing QUERY');
  const family = flag(args, 'family');
  const agent = flag(args, 'agent');
  const limit = flag(args, 'limit');
  const res = await act(env, await readKey(env.keyFile), 'SearchTools', {
    query,
    ...(family !== undefined ? { family } : {}),
    ...(agent !== undefined ? { agent } : {}),
    ...(limit !== undefined ? { limit: Number(limit) } : {}),
  });
  print(res, () =>
    res.families.length === 0
      ? `no tools match "${query}"`
      : res.families
          .map((f) =>
            [
              f.family,
              ...f.tools.map(
                (t) => `  ${t.name}  ${t.score.toFixed(2)}${t.description ? `  ${t.description.split('\n')[0]}` : ''}`,
              ),
            ].join('\n'),
          )
          .join('\n'),
  );
}
