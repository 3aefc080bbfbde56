// `mcpx agents …`: agents created, granted servers and listed.
import type { AgentView } from '@mcpx/contracts';
import { UsageError, flags, need, type ParsedArgs, type Print } from './args.js';
import { act, readKey, type CliEnv } from './client.js';

function agentLine(a: AgentView): string {
  return `${a.name}  (${a.id})  grants: ${a.grants.mcpServers.length > 0 ? a.grants.mcpServers.join(', ') : 'none'}`;
}

export async function agentsCreate(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const { agent } = await act(env, key, 'CreateAgent', {
    name: need(args, 2, 'NAME'),
    definition: { mcpServers: flags(args, 'grant') },
  });
  print(agent, () => agentLine(agent));
}

export function changeGrants(add: boolean): (env: CliEnv, args: ParsedArgs, print: Print) => Promise<void> {
  return async (env, args, print) => {
    const ref = need(args, 2, 'AGENT');
    const servers = args.positionals.slice(3);
    if (servers.length === 0) throw new UsageError('name at least one SERVER');
    const key = await readKey(env.keyFile);
    const { agent: current } = await act(env, key, 'GetAgent', { agent: ref });
    const grants = add
      ? [...current.definition.mcpServers, ...servers.filter((s) => !current.definition.mcpServers.includes(s))]
      : current.definition.mcpServers.filter((s) => !servers.includes(s));
    const { agent } = await act(env, key, 'UpdateAgent', { agent: current.id, definition: { mcpServers: grants } });
    print(agent, () => agentLine(agent));
  };
}

export async function agentsShow(env: CliEnv, args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const { agent } = await act(env, key, 'GetAgent', { agent: need(args, 2, 'AGENT') });
  print(agent, () => agentLine(agent));
}

export async function agentsList(env: CliEnv, _args: ParsedArgs, print: Print): Promise<void> {
  const key = await readKey(env.keyFile);
  const res = await act(env, key, 'ListAgents', {});
  print(res, () =>
    res.agents.length === 0 ? 'no agents yet: mcpx agents create NAME' : res.agents.map(agentLine).join('\n'),
  );
}
