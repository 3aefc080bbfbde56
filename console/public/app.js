// The web console: a client of the signed action API, like the CLI. The account key lives in
// this browser (localStorage) and signs every action with WebCrypto Ed25519.
import { encodeCanonical } from './cbor.js';

const $ = (id) => document.getElementById(id);
const KEY_STORAGE = 'mcpx.key';
const AGENT_STORAGE = 'mcpx.agent';
const PKCS8_PREFIX = new Uint8Array([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]);

const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const fromB64url = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));

let key = null; // {principal, seed, privateKey}
let servers = [];
let agents = [];
let events = null;
const expanded = new Set();

function say(text, isError = false) {
  $('message').textContent = text;
  $('message').className = isError ? 'chip error' : 'muted';
}

async function importKey(stored) {
  const pkcs8 = new Uint8Array([...PKCS8_PREFIX, ...fromB64url(stored.seed)]);
  const privateKey = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign']);
  return { principal: stored.principal, seed: stored.seed, privateKey };
}

async function newKey() {
  const pair = await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify']);
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  const pkcs8 = new Uint8Array(await crypto.subtle.exportKey('pkcs8', pair.privateKey));
  return { principal: b64url(raw), seed: b64url(pkcs8.slice(PKCS8_PREFIX.length)) };
}

async function envelope(action) {
  const nonce = b64url(crypto.getRandomValues(new Uint8Array(16)));
  const unsigned = { signer: key.principal, account: key.principal, ts: Date.now(), nonce, action, sig: '' };
  const sig = new Uint8Array(await crypto.subtle.sign({ name: 'Ed25519' }, key.privateKey, encodeCanonical(unsigned)));
  return { ...unsigned, sig: b64url(sig) };
}

async function act(type, fields = {}) {
  if (!key) throw new Error('create or load a key first');
  const res = await fetch('/v1/actions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(await envelope({ type, ...fields })) });
  const body = await res.json();
  if (!res.ok || body.error) {
    const e = body.error ?? { code: 'internal', message: `HTTP ${res.status}` };
    throw new Error(`${e.code}: ${e.message}`);
  }
  return body;
}

function currentAgent() {
  return agents.find((a) => a.id === $('agent-select').value) ?? null;
}

function statusChip(s) {
  const chip = document.createElement('span');
  chip.className = 'chip';
  if (s.status.state === 'ok') {
    chip.classList.add('ok');
    chip.textContent = `${s.tools.length} tools`;
  } else if (s.status.state === 'error') {
    chip.classList.add('error');
    chip.textContent = 'Unreachable';
  } else if (s.status.state === 'auth_required') {
    chip.classList.add('auth');
    chip.textContent = 'Waiting for authorization';
  } else chip.textContent = 'Not checked';
  return chip;
}

function renderServers() {
  const list = $('server-list');
  list.replaceChildren();
  $('servers-empty').hidden = servers.length > 0;
  const agent = currentAgent();
  for (const s of servers) {
    const li = document.createElement('li');
    li.className = 'server';
    const row = document.createElement('div');
    row.className = 'server-row';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.title = agent ? `enable for ${agent.name}` : 'pick an agent first';
    box.disabled = !agent;
    box.checked = !!agent && agent.grants.mcpServers.includes(s.name);
    box.addEventListener('click', (e) => e.stopPropagation());
    box.addEventListener('change', () => void toggleGrant(s.name, box.checked));
    const name = document.createElement('strong');
    name.textContent = s.name;
    const info = document.createElement('span');
    info.append(statusChip(s));
    if (s.hasSecrets) {
      const auth = document.createElement('span');
      auth.className = 'chip auth';
      auth.textContent = 'Auth';
      info.append(' ', auth);
    }
    const host = document.createElement('span');
    host.className = 'muted';
    try {
      host.textContent = new URL(s.url).host;
    } catch {
      host.textContent = s.url;
    }
    const actions = document.createElement('span');
    actions.className = 'actions';
    const refresh = document.createElement('button');
    refresh.textContent = 'Refresh';
    refresh.addEventListener('click', (e) => {
      e.stopPropagation();
      void run(async () => {
        const { server } = await act('RefreshMcpServer', { name: s.name });
        say(server.status.state === 'ok' ? `${s.name}: connected, ${server.tools.length} tools` : `${s.name}: ${server.status.error}`, server.status.state !== 'ok');
        await load();
      });
    });
    const remove = document.createElement('button');
    remove.textContent = 'Remove';
    remove.addEventListener('click', (e) => {
      e.stopPropagation();
      if (!confirm(`Remove ${s.name}? Agents lose its tools.`)) return;
      void run(async () => {
        await act('DeleteMcpServer', { name: s.name });
        await load();
      });
    });
    actions.append(refresh, remove);
    row.append(box, name, info, host, actions);
    row.addEventListener('click', () => {
      if (expanded.has(s.name)) expanded.delete(s.name);
      else expanded.add(s.name);
      renderServers();
    });
    li.append(row);
    if (s.status.state === 'error' && s.status.error) {
      const err = document.createElement('div');
      err.className = 'error-text';
      err.textContent = s.status.error;
      li.append(err);
    }
    if (expanded.has(s.name)) {
      const tools = document.createElement('ul');
      tools.className = 'tools';
      for (const t of s.tools) {
        const item = document.createElement('li');
        item.textContent = `${t.toolName}${t.description ? ` — ${t.description.split('\n')[0]}` : ''}`;
        item.addEventListener('click', () => {
          $('contract-title').textContent = t.toolName;
          $('contract-body').textContent = JSON.stringify({ description: t.description, inputSchema: t.inputSchema }, null, 2);
          $('contract-dialog').showModal();
        });
        tools.append(item);
      }
      if (s.tools.length === 0) tools.append(Object.assign(document.createElement('li'), { textContent: 'no tools', className: 'muted' }));
      li.append(tools);
    }
    list.append(li);
  }
}

function renderAgents() {
  const select = $('agent-select');
  const keep = select.value || localStorage.getItem(AGENT_STORAGE) || '';
  select.replaceChildren(...agents.map((a) => Object.assign(document.createElement('option'), { value: a.id, textContent: a.name })));
  if (agents.some((a) => a.id === keep)) select.value = keep;
}

async function renderTools() {
  const agent = currentAgent();
  if (!agent) {
    $('tool-index').textContent = 'Pick an agent.';
    return;
  }
  const res = await act('ListAgentTools', { agent: agent.id });
  $('tool-index').textContent = res.index || 'No tools: enable a server above.';
}

async function toggleGrant(server, on) {
  const agent = currentAgent();
  if (!agent) return;
  const grants = on ? [...new Set([...agent.grants.mcpServers, server])] : agent.grants.mcpServers.filter((g) => g !== server);
  await run(async () => {
    await act('UpdateAgent', { agent: agent.id, definition: { mcpServers: grants } });
    await load();
  });
}

async function load() {
  if (!key) return;
  const [s, a] = await Promise.all([act('ListMcpServers'), act('ListAgents')]);
  servers = s.servers;
  agents = a.agents;
  renderAgents();
  renderServers();
  await renderTools();
}

async function run(fn) {
  try {
    await fn();
  } catch (err) {
    say(err.message, true);
  }
}

async function subscribe() {
  events?.close();
  if (!key) return;
  const env = await envelope({ type: 'SubscribeEvents' });
  const json = new TextEncoder().encode(JSON.stringify(env));
  events = new EventSource(`/v1/events?envelope=${b64url(json)}`);
  const reload = () => void run(load);
  events.addEventListener('agent-tools-changed', reload);
  events.addEventListener('mcp-servers-changed', reload);
  // The envelope's nonce is single-use: a dropped stream is opened again with a fresh one.
  events.onerror = () => {
    events.close();
    setTimeout(() => void subscribe(), 2000);
  };
}

async function useKey(stored) {
  key = await importKey(stored);
  localStorage.setItem(KEY_STORAGE, JSON.stringify({ principal: stored.principal, seed: stored.seed }));
  $('principal').textContent = `account ${key.principal.slice(0, 12)}…`;
  $('principal').title = key.principal;
  say('');
  await load();
  await subscribe();
}

function suggestName(url) {
  try {
    const hostname = new URL(url).hostname;
    if (/^[\d.]+$|^\[/.test(hostname)) return 'local';
    const host = hostname.replace(/^(www|mcp|api)\./, '');
    return (host.split('.')[0] ?? '').toLowerCase().replace(/[^a-z0-9_-]/g, '-').replace(/^[^a-z0-9]+/, '').slice(0, 32);
  } catch {
    return '';
  }
}

$('key-new').addEventListener('click', () => void run(async () => useKey(await newKey())));
$('key-paste').addEventListener('click', () => $('key-dialog').showModal());
$('key-use').addEventListener('click', () => void run(async () => useKey(JSON.parse($('key-text').value))));
$('key-forget').addEventListener('click', () => {
  localStorage.removeItem(KEY_STORAGE);
  location.reload();
});
$('agent-select').addEventListener('change', () => {
  localStorage.setItem(AGENT_STORAGE, $('agent-select').value);
  renderServers();
  void run(renderTools);
});
$('agent-create').addEventListener('click', () =>
  void run(async () => {
    const { agent } = await act('CreateAgent', { name: $('agent-name').value.trim(), definition: { mcpServers: [] } });
    localStorage.setItem(AGENT_STORAGE, agent.id);
    $('agent-name').value = '';
    await load();
    $('agent-select').value = agent.id;
    renderServers();
  }),
);
$('server-add').addEventListener('click', () => {
  $('add-form').reset();
  $('add-result').textContent = '';
  $('add-dialog').showModal();
});
$('add-form').elements.url.addEventListener('input', (e) => {
  const name = $('add-form').elements.name;
  if (!name.dataset.touched) name.value = suggestName(e.target.value);
});
$('add-form').elements.name.addEventListener('input', (e) => (e.target.dataset.touched = '1'));
$('add-save').addEventListener('click', () =>
  void run(async () => {
    const f = $('add-form').elements;
    const config = { url: f.url.value.trim() };
    if (f.transport.value) config.transport = f.transport.value;
    if (f.headerName.value.trim() && f.headerValue.value) config.secretHeaders = { [f.headerName.value.trim()]: f.headerValue.value };
    $('add-result').textContent = 'Connecting…';
    try {
      const { server } = await act('SetMcpServer', { name: f.name.value.trim(), config });
      f.headerValue.value = '';
      $('add-result').textContent = server.status.state === 'ok' ? `Connected, ${server.tools.length} tools.` : `Saved, but: ${server.status.error}`;
      const agent = currentAgent();
      if (agent && !agent.grants.mcpServers.includes(server.name)) {
        await act('UpdateAgent', { agent: agent.id, definition: { mcpServers: [...agent.grants.mcpServers, server.name] } });
      }
      await load();
    } catch (err) {
      $('add-result').textContent = err.message;
    }
  }),
);

const saved = localStorage.getItem(KEY_STORAGE);
if (saved) void run(() => useKey(JSON.parse(saved)));
else say('Create a key (or use the one `mcpx keys new` wrote) to start.');
