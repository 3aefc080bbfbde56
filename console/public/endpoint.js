// The current agent's MCP endpoint: its URL for MCP clients outside the platform, its bearer
// tokens (ListAgentTokens; a new one is shown here once and never again; revoke), and a config
// snippet. The endpoint is a service of its own: its base URL is what the registry's settings say
// (`settings.json`: `ENDPOINT_PUBLIC_URL`, else `ENDPOINT_PORT` on this page's host), unless the
// owner sets another here (kept in this browser).
import { act } from './api.js';
import { $, el, run, say } from './ui.js';

const BASE_STORAGE = 'mcpx.endpointBase';
let currentAgent = () => null;
/** The endpoint's base URL from the deployment's settings; until they are read, this page's host on the default port. */
let settingsBase = '';

/** Reads the deployment's endpoint URL (`/console/settings.json`) once. */
export async function loadEndpointSettings() {
  const res = await fetch('settings.json');
  if (!res.ok) throw new Error(`the console settings could not be read (HTTP ${res.status})`);
  const body = await res.json();
  settingsBase =
    typeof body?.endpoint?.url === 'string'
      ? body.endpoint.url
      : `${location.protocol}//${location.hostname}:${Number(body?.endpoint?.port) || 8083}`;
  /** @type {HTMLInputElement} */ ($('endpoint-base')).placeholder = settingsBase;
  /** @type {HTMLInputElement} */ ($('endpoint-base')).value = endpointBase();
}

/** The endpoint's base URL: the owner's choice in this browser, else the deployment's. */
export function endpointBase() {
  return localStorage.getItem(BASE_STORAGE) || settingsBase;
}

export function endpointUrl(agent) {
  return `${endpointBase().replace(/\/+$/, '')}/v1/agents/${encodeURIComponent(agent.id)}/mcp`;
}

function snippet(agent, token) {
  const name = `mcpx-${agent.name}`.replace(/[^A-Za-z0-9_-]/g, '-');
  return JSON.stringify(
    { mcpServers: { [name]: { url: endpointUrl(agent), headers: { Authorization: `Bearer ${token}` } } } },
    null,
    2,
  );
}

function tokenItem(t) {
  const revoke = el('button', { type: 'button', textContent: 'Revoke', disabled: t.state !== 'active' });
  revoke.addEventListener(
    'click',
    () =>
      void run(async () => {
        revoke.disabled = true;
        await act('RevokeAgentToken', { id: t.id });
        say(`token ${t.name} revoked: the endpoint refuses it from now on`);
        await renderEndpoint();
      }),
  );
  const when =
    t.state === 'revoked' ? `revoked ${t.revokedAt}` : t.expiresAt ? `expires ${t.expiresAt}` : 'never expires';
  return el(
    'li',
    { className: 'token-row' },
    el('strong', { textContent: t.name }),
    el('span', { className: `chip ${t.state === 'active' ? 'ok' : 'error'}`, textContent: t.state }),
    el('span', {
      className: 'muted',
      textContent: ` ${t.id} · created ${t.createdAt} · ${when}${t.userMayApprove ? ' · its user may approve its always_ask calls' : ''} `,
    }),
    revoke,
  );
}

/** Shows the current agent's endpoint and tokens (called when the agent or its tools change). */
export async function renderEndpoint() {
  const agent = currentAgent();
  $('endpoint-new-token').replaceChildren();
  if (!agent) {
    $('endpoint-url').textContent = 'Pick an agent.';
    $('endpoint-tokens').replaceChildren();
    $('endpoint-snippet').textContent = '';
    return;
  }
  $('endpoint-url').textContent = endpointUrl(agent);
  $('endpoint-snippet').textContent = snippet(agent, '<TOKEN>');
  const res = await act('ListAgentTokens', { agent: agent.id });
  $('endpoint-tokens').replaceChildren(...res.tokens.map(tokenItem));
  $('endpoint-tokens-empty').hidden = res.tokens.length > 0;
}

export function initEndpoint(deps) {
  currentAgent = deps.currentAgent;
  // Whether a new token's holder may approve its own always_ask calls (asked in their MCP client).
  $('endpoint-token-create').before(
    el(
      'label',
      { title: "The MCP client's user approves the token's always_ask calls when asked, instead of the owner" },
      el('input', { type: 'checkbox', id: 'endpoint-token-approve' }),
      ' its user may approve',
    ),
  );
  /** @type {HTMLInputElement} */ ($('endpoint-base')).value = endpointBase();
  $('endpoint-base').addEventListener('change', () => {
    const v = /** @type {HTMLInputElement} */ ($('endpoint-base')).value.trim();
    if (v === '') localStorage.removeItem(BASE_STORAGE);
    else localStorage.setItem(BASE_STORAGE, v);
    void run(renderEndpoint);
  });
  $('endpoint-token-create').addEventListener(
    'click',
    () =>
      void run(async () => {
        const agent = currentAgent();
        if (!agent) throw new Error('pick an agent first');
        const name = /** @type {HTMLInputElement} */ ($('endpoint-token-name')).value.trim();
        const userMayApprove = /** @type {HTMLInputElement} */ ($('endpoint-token-approve')).checked;
        const created = await act('CreateAgentToken', {
          agent: agent.id,
          ...(name ? { name } : {}),
          ...(userMayApprove ? { userMayApprove } : {}),
        });
        /** @type {HTMLInputElement} */ ($('endpoint-token-name')).value = '';
        /** @type {HTMLInputElement} */ ($('endpoint-token-approve')).checked = false;
        await renderEndpoint();
        // Shown this once: only its hash is kept.
        $('endpoint-new-token').replaceChildren(
          el('p', { textContent: 'New token, shown this once (only its hash is kept): copy it now.' }),
          el('code', { className: 'token', textContent: created.token }),
        );
        $('endpoint-snippet').textContent = snippet(agent, created.token);
      }),
  );
}
