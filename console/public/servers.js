// The account's MCP servers: status, tools, the grant of the current agent, an oauth server's
// pre-registered client (never a secret or key, which the registry does not show), and for an
// oauth server waiting for sign-in an Authorize button (a fresh URL each time, in a popup).
import { act } from './api.js';
import { authorizeIn, discard, openAuthorizationWindow } from './oauth-popup.js';
import { initToolList, toolList } from './tool-list.js';
import { $, el, run, say } from './ui.js';

const expanded = new Set();
let ctx = null; // {state, load, currentAgent, toggleGrant}
const GRANT_LABELS = { authorization_code: 'sign in', client_credentials: 'machine to machine' };

/** A machine to machine server: nobody signs in, so it is never offered Authorize. */
const isMachine = (s) => s.oauthClient?.grant === 'client_credentials';

export function initServers(context) {
  ctx = context;
  initToolList({ state: context.state, render: () => (context.render ?? renderServers)() });
}

function statusChip(s) {
  const chip = el('span', { className: 'chip' });
  chip.dataset.state = s.status.state;
  if (s.status.state === 'ok') {
    chip.classList.add('ok');
    chip.textContent = `${s.tools.length} tools`;
  } else if (s.status.state === 'error') {
    chip.classList.add('error');
    // A machine client's failure is as often its credentials as the network: the error text says which.
    chip.textContent = isMachine(s) ? 'Not connected' : 'Unreachable';
  } else if (s.status.state === 'auth_required') {
    chip.classList.add('auth');
    chip.textContent = 'Waiting for authorization';
  } else chip.textContent = 'Not checked';
  return chip;
}

/** The protocol era and version the server was last discovered with (`modern 2026-07-28`). */
function eraChip(s) {
  const chip = el('span', {
    className: 'chip era',
    textContent: s.protocolVersion ? `${s.era} ${s.protocolVersion}` : s.era,
  });
  chip.dataset.era = s.era;
  return chip;
}

/**
 * Asks for a fresh authorization URL and opens it in the popup opened by the click. The URL is a
 * single-use ticket of the registry: opening it binds the authorization to this browser (an
 * HttpOnly cookie the callback checks) and leads on to the authorization server. Abandoning the
 * popup costs nothing: the server stays `auth_required` and Authorize asks for a new ticket.
 */
export async function authorize(name, popup = openAuthorizationWindow()) {
  try {
    const res = await act('AuthorizeMcpServer', { name });
    followAuthorization(name, res, popup);
  } catch (err) {
    discard(popup);
    throw err;
  }
}

/**
 * A server saved with no auth (or a token) whose server asks for OAuth: saved again with OAuth
 * (same URL, transport and pin), then authorized in the popup opened by the click.
 */
export async function switchToOAuth(s, popup) {
  try {
    const res = await act('SetMcpServer', {
      name: s.name,
      config: {
        url: s.url,
        auth: 'oauth',
        ...(s.transport ? { transport: s.transport } : {}),
        ...(s.pin && s.pin !== 'off' ? { pin: s.pin } : {}),
      },
    });
    followAuthorization(s.name, res, popup);
    await ctx.load();
  } catch (err) {
    discard(popup);
    throw err;
  }
}

/** What a server's status says to a person: its one line (what to try) when there is one, else its error. */
export function statusText(s) {
  return s.status.summary ?? s.status.error ?? '';
}

/** After SetMcpServer or AuthorizeMcpServer: sends the popup to the authorization URL, if any. */
export function followAuthorization(name, res, popup) {
  if (res.authorizationUrl) {
    say(`${name}: authorize in the popup window`);
    authorizeIn(
      popup,
      name,
      res.authorizationUrl,
      () =>
        void run(async () => {
          await ctx.load();
          const s = ctx.state.servers.find((x) => x.name === name);
          if (s?.status.state === 'ok') say(`${name}: connected, ${s.tools.length} tools`);
          else say(`${name}: not authorized yet — Authorize picks it up again`);
        }),
    );
    return;
  }
  discard(popup);
  if (res.authorizationError) say(`${name}: ${res.authorizationError}`, true);
}

function button(text, onClick) {
  const b = el('button', { type: 'button', textContent: text });
  b.addEventListener('click', (e) => {
    e.stopPropagation();
    onClick();
  });
  return b;
}

export function serverActions(s) {
  const actions = el('span', { className: 'actions' });
  if (s.status.state === 'auth_required' && s.auth === 'oauth' && !isMachine(s)) {
    // Opened inside the click: the popup must not wait for the round trip.
    const authorizeButton = button('Authorize', () => void run(() => authorize(s.name, openAuthorizationWindow())));
    authorizeButton.classList.add('primary');
    actions.append(authorizeButton);
  } else if (s.status.state === 'auth_required' && s.auth !== 'oauth' && !s.builtin) {
    // Added with another method, the server asks for OAuth: switch it to OAuth and sign in, in one click.
    const oauthButton = button(
      'Authorize with OAuth',
      () => void run(() => switchToOAuth(s, openAuthorizationWindow())),
    );
    oauthButton.classList.add('primary');
    oauthButton.title = 'This server signs in with OAuth: save it with OAuth and authorize in a popup';
    actions.append(oauthButton);
  }
  const refresh = button(
    'Refresh',
    () =>
      void run(async () => {
        const res = await act('RefreshMcpServer', { name: s.name });
        const server = res.server;
        say(
          server.status.state === 'ok'
            ? `${s.name}: connected, ${server.tools.length} tools`
            : `${s.name}: ${server.status.error ?? server.status.state}`,
          server.status.state !== 'ok',
        );
        await ctx.load();
      }),
  );
  const remove = button('Remove', () => {
    if (!window.confirm(`Remove ${s.name}? Agents lose its tools.`)) return;
    void run(async () => {
      await act('DeleteMcpServer', { name: s.name });
      await ctx.load();
    });
  });
  actions.append(refresh, remove);
  return actions;
}

/** `oauthClient` in words: "client ID ci · machine to machine · key set (ES256) · scope mcp:tools". */
function clientLine(client) {
  const credential = client.hasPrivateKey
    ? `key set${client.keyAlg ? ` (${client.keyAlg})` : ''}`
    : client.hasClientSecret
      ? 'secret set'
      : 'no secret';
  const parts = [`client ID ${client.clientId}`, GRANT_LABELS[client.grant] ?? client.grant, credential];
  if (client.scope) parts.push(`scope ${client.scope}`);
  const line = el('div', { className: 'oauth-client muted', textContent: `OAuth ${parts.join(' · ')}` });
  line.dataset.grant = client.grant;
  return line;
}

/** A pinned server's mode and, while any wait, how many of its tool changes wait for a review (`ListMcpServers` `pin`, `pendingReviews`). */
function pinChip(s) {
  const waiting = s.pendingReviews > 0 ? ` · ${s.pendingReviews} to review` : '';
  const chip = el('span', {
    className: `chip pin${waiting ? ' auth' : ''}`,
    textContent: `pinned: ${s.pin}${waiting}`,
  });
  chip.dataset.pendingReviews = String(s.pendingReviews ?? 0);
  return chip;
}

/** The status line of a server's chips: state, auth, era, pin (the list and the server page). */
export function serverChips(s) {
  const info = el('span', { className: 'chips' }, statusChip(s));
  if (s.hasSecrets || s.auth === 'oauth')
    info.append(' ', el('span', { className: 'chip auth', textContent: s.auth === 'oauth' ? 'OAuth' : 'Auth' }));
  if (s.era) info.append(' ', eraChip(s));
  if (s.pin !== undefined && s.pin !== 'off') info.append(' ', pinChip(s));
  return info;
}

export function hostOf(url) {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

function serverItem(s, agent) {
  const box = el('input', {
    type: 'checkbox',
    title: agent ? `give its tools to ${agent.name}` : 'pick an agent first',
    disabled: !agent,
  });
  box.setAttribute('aria-label', agent ? `${s.name} for agent ${agent.name}` : `${s.name}: pick an agent first`);
  box.checked = !!agent && agent.grants.mcpServers.includes(s.name);
  box.addEventListener('change', () => void ctx.toggleGrant(s.name, box.checked));
  const open = expanded.has(s.name);
  const toggle = button(open ? 'Tools ▾' : 'Tools ▸', () => {
    if (expanded.has(s.name)) expanded.delete(s.name);
    else expanded.add(s.name);
    renderServers();
  });
  toggle.classList.add('quiet', 'tools-toggle');
  toggle.setAttribute('aria-expanded', String(open));
  toggle.setAttribute('aria-label', `tools of ${s.name}`);
  toggle.dataset.focusKey = `tools\n${s.name}`;
  const name = el(
    'strong',
    {},
    el('a', { href: `#/servers/${encodeURIComponent(s.name)}`, className: 'server-link', textContent: s.name }),
  );
  const row = el(
    'div',
    { className: 'server-row' },
    box,
    name,
    serverChips(s),
    el('span', { className: 'muted host', textContent: hostOf(s.url) }),
    toggle,
    serverActions(s),
  );
  const li = el('li', { className: 'server' }, row);
  li.dataset.server = s.name;
  li.dataset.state = s.status.state;
  if (s.pin !== undefined && s.pin !== 'off') li.dataset.tags = 'pinned';
  // Found by its tools too: a search for a tool's name finds the server that has it.
  li.dataset.search = [s.url, ...s.tools.map((t) => `${t.toolName} ${t.description ?? ''}`)].join(' ');
  if (s.oauthClient) li.append(clientLine(s.oauthClient));
  if (s.status.state !== 'ok' && statusText(s) !== '')
    li.append(el('div', { className: 'error-text', textContent: statusText(s) }));
  // Tools the server lists that agents do not get, and why: nothing is lost without a word.
  for (const t of s.status.skippedTools ?? [])
    li.append(el('div', { className: 'skipped-tool muted', textContent: `Not offered: ${t.name} — ${t.reason}` }));
  if (open) li.append(toolList(s));
  return li;
}

export function renderServers() {
  const { servers } = ctx.state;
  $('servers-empty').hidden = servers.length > 0;
  // What waits for the owner: servers to authorize and servers that cannot be reached.
  const waiting = servers.filter((s) => s.status.state === 'auth_required' || s.status.state === 'error').length;
  $('server-wait-count').textContent = waiting > 0 ? String(waiting) : '';
  const agent = ctx.currentAgent();
  const list = $('server-list');
  // Drawing the list again must not drop the keyboard focus of the control in use.
  const focused = list.contains(document.activeElement)
    ? /** @type {HTMLElement} */ (document.activeElement).dataset.focusKey
    : undefined;
  list.replaceChildren(...servers.map((s) => serverItem(s, agent)));
  if (focused !== undefined)
    [.../** @type {NodeListOf<HTMLElement>} */ (list.querySelectorAll('[data-focus-key]'))]
      .find((n) => n.dataset.focusKey === focused)
      ?.focus();
}
