// The agents list (`#/agents`) and one agent's page (`#/agents/<id>`): the servers it may use
// (ticked here), its tools with their permission levels, what the model reads of them, its
// endpoint (the whole agent, and one face per server), and its activity.
import { act } from './api.js';
import { endpointBase, endpointUrl } from './endpoint.js';
import { $, el, link, setText } from './ui.js';

const LEVELS = { act: 'act', always_ask: 'always ask' };

/** The agents list: each agent links to its page. */
export function renderAgentList(agents, servers) {
  $('agents-empty').hidden = agents.length > 0;
  $('agent-list').replaceChildren(
    ...agents.map((a) => {
      const tools = servers.filter((s) => a.grants.mcpServers.includes(s.name)).reduce((n, s) => n + s.tools.length, 0);
      const li = el(
        'li',
        { className: 'agent' },
        el('strong', {}, link(`#/agents/${encodeURIComponent(a.id)}`, a.name)),
        el('span', { className: 'muted', textContent: `${a.grants.mcpServers.length} servers · about ${tools} tools` }),
        el('span', { className: 'muted', textContent: a.grants.mcpServers.join(', ') }),
      );
      li.dataset.agent = a.id;
      li.dataset.search = a.id;
      return li;
    }),
  );
}

function grantItem(agent, s, toggleGrant) {
  const box = el('input', { type: 'checkbox', checked: agent.grants.mcpServers.includes(s.name) });
  box.setAttribute('aria-label', `${s.name} for agent ${agent.name}`);
  box.addEventListener('change', () => void toggleGrant(s.name, box.checked, agent));
  const state =
    s.status.state === 'ok'
      ? `${s.tools.length} tools`
      : s.status.state === 'auth_required'
        ? 'waiting for authorization'
        : s.status.state === 'error'
          ? 'unreachable'
          : 'not checked';
  const li = el(
    'li',
    {},
    el('label', {}, box, ' ', el('strong', { textContent: s.name })),
    ' ',
    el('span', {
      className: `chip ${s.status.state === 'ok' ? 'ok' : s.status.state === 'error' ? 'error' : 'auth'}`,
      textContent: state,
    }),
    ' ',
    link(`#/servers/${encodeURIComponent(s.name)}`, 'open', 'muted'),
  );
  li.dataset.server = s.name;
  return li;
}

function toolItem(t) {
  const level = el('span', {
    className: `chip level ${t.permission === 'always_ask' ? 'auth' : 'ok'}`,
    textContent: LEVELS[t.permission] ?? t.permission,
  });
  const li = el(
    'li',
    {},
    el('code', { textContent: t.name }),
    ' ',
    level,
    ' ',
    el('span', { className: 'muted', textContent: (t.title ?? t.description ?? '').split('\n')[0] ?? '' }),
  );
  li.dataset.tool = t.name;
  li.dataset.permission = t.permission;
  li.dataset.search = `${t.server} ${t.remoteName}`;
  return li;
}

function endpointBlock(agent) {
  const box = el('div', { className: 'agent-endpoint' });
  if (endpointBase() === '') return box;
  const base = endpointBase().replace(/\/+$/, '');
  box.append(
    el('p', {}, 'Every granted tool: ', el('code', { className: 'endpoint-url', textContent: endpointUrl(agent) })),
  );
  const faces = agent.grants.mcpServers.map((name) =>
    el(
      'li',
      {},
      el('code', {
        textContent: `${base}/v1/agents/${encodeURIComponent(agent.id)}/servers/${encodeURIComponent(name)}/mcp`,
      }),
      el('span', { className: 'muted', textContent: ` only ${name}'s tools` }),
    ),
  );
  if (faces.length > 0)
    box.append(
      el('p', { className: 'muted', textContent: 'One server at a time:' }),
      el('ul', { className: 'faces' }, ...faces),
    );
  box.append(el('p', {}, link('#/endpoint', 'Tokens and client config')));
  return box;
}

/** Draws the page of agent `id`: grants, tools with levels, the index text, the endpoint, its activity. */
export async function renderAgentPage(id, { agents, servers, toggleGrant, mountActivity }) {
  const agent = agents.find((a) => a.id === id || a.name === id);
  $('agent-page').dataset.agent = agent?.id ?? '';
  if (!agent) {
    $('agent-page-head').replaceChildren(
      el('p', { textContent: `No agent ${id} in this account.` }),
      link('#/agents', 'All agents'),
    );
    $('agent-grants').replaceChildren();
    $('tool-index').replaceChildren();
    return;
  }
  $('agent-page-head').replaceChildren(
    el(
      'div',
      { className: 'page-head' },
      el('h2', { textContent: agent.name }),
      el('span', {
        className: 'muted',
        textContent: `${agent.id} · created ${new Date(agent.createdAt).toLocaleDateString()}`,
      }),
    ),
  );
  $('agent-grants').replaceChildren(...servers.map((s) => grantItem(agent, s, toggleGrant)));
  if (servers.length === 0)
    $('agent-grants').replaceChildren(
      el('li', { className: 'muted' }, 'No servers yet: ', link('#/servers', 'add one'), '.'),
    );
  $('agent-endpoint').replaceChildren(endpointBlock(agent));
  const res = await act('ListAgentTools', { agent: agent.id });
  $('tool-index').replaceChildren(...res.tools.map(toolItem));
  if (res.tools.length === 0)
    $('tool-index').replaceChildren(el('li', { className: 'muted', textContent: 'No tools: tick a server above.' }));
  setText($('tool-index-text'), res.index || '(empty)');
  await mountActivity($('agent-activity'), { agent: agent.id });
}
