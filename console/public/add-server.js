// The add-server dialog: a name, a URL and one of the four auth methods (docs/servers.md#auth-methods). Saving
// connects at once; an oauth server that signs in opens its authorization in a popup, a machine
// to machine one (client credentials) never does. Secret inputs are emptied once saved: no
// token, header value, client secret or private key stays in the page.
import { act } from './api.js';
import { droppedSecretsText } from './dropped-secrets.js';
import { openAuthorizationWindow } from './oauth-popup.js';
import { followAuthorization } from './servers.js';
import { KEY_ALGS, serverConfig } from './server-form.js';
import { $, el, run, say } from './ui.js';

const SECRET_FIELDS = ['token', 'headers', 'clientSecret', 'machineClientSecret', 'privateKey'];
const LABELS = {
  name: 'Name',
  url: 'URL',
  auth: 'Auth',
  token: 'Token',
  headers: 'Headers',
  grant: 'Grant',
  clientId: 'Client ID',
  clientSecret: 'Client secret',
  credential: 'Client authentication',
  privateKey: 'Private key',
  keyAlg: 'Algorithm',
  scope: 'Scope',
  server: 'Not saved',
};
/** Radio groups whose choice shows the sections marked `data-<name>="<value>"` and hides the others. */
const CHOICES = ['auth', 'grant', 'credential'];
let ctx = null; // {load, agents}

/**
 * The add-server form's controls by name (`form().url.value`), as index.html names them.
 * @returns {Record<string, any>}
 */
function form() {
  return /** @type {HTMLFormElement} */ ($('add-form')).elements;
}

function suggestName(url) {
  try {
    const hostname = new URL(url).hostname;
    if (/^[\d.]+$|^\[/.test(hostname)) return 'local';
    const host = hostname.replace(/^(www|mcp|api)\./, '');
    return (host.split('.')[0] ?? '')
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 32);
  } catch {
    return '';
  }
}

/** Shows the sections of the chosen auth method, grant and client authentication, hides the others. */
function showChosenSections() {
  for (const name of CHOICES) {
    const chosen = form()[name].value;
    for (const section of /** @type {NodeListOf<HTMLElement>} */ (
      document.querySelectorAll(`#add-form [data-${name}]`)
    ))
      section.hidden = section.dataset[name] !== chosen;
  }
}

/** The form's values as serverConfig takes them: the client fields of the chosen grant. */
function formValues() {
  const f = form();
  const machine = f.auth.value === 'oauth' && f.grant.value === 'client_credentials';
  return {
    url: f.url.value,
    transport: f.transport.value,
    auth: f.auth.value,
    token: f.token.value,
    headers: f.headers.value,
    grant: f.grant.value,
    clientId: machine ? f.machineClientId.value : f.clientId.value,
    clientSecret: machine ? (f.credential.value === 'secret' ? f.machineClientSecret.value : '') : f.clientSecret.value,
    ...(machine
      ? {
          credential: f.credential.value,
          privateKey: f.credential.value === 'key' ? f.privateKey.value : '',
          keyAlg: f.keyAlg.value,
          scope: f.scope.value,
        }
      : {}),
  };
}

function showErrors(errors) {
  const list = $('add-errors');
  list.replaceChildren(
    ...errors.map((e) => {
      const where = e.field === 'headers' && e.line > 0 ? `Headers, line ${e.line}` : (LABELS[e.field] ?? e.field);
      const item = el('li', { className: 'error-text', textContent: `${where}: ${e.message}` });
      item.dataset.field = e.field;
      if (e.line !== undefined) item.dataset.line = String(e.line);
      return item;
    }),
  );
}

function clearSecrets() {
  for (const name of SECRET_FIELDS) form()[name].value = '';
}

/** The agent ticks of the dialog, one per agent of the account, none ticked: nothing is granted unasked. */
function drawAgentTicks() {
  const agents = ctx.agents();
  $('add-grants-none').hidden = agents.length > 0;
  $('add-grant-list').replaceChildren(
    ...agents.map((a) => {
      const box = el('input', { type: 'checkbox', name: 'grantAgent', value: a.id });
      box.setAttribute('aria-label', `give it to ${a.name}`);
      return el('label', { className: 'inline' }, box, ` ${a.name}`);
    }),
  );
}

/** The ids of the agents ticked in the dialog. */
function tickedAgents() {
  return [
    .../** @type {NodeListOf<HTMLInputElement>} */ (
      document.querySelectorAll('#add-grant-list input[name="grantAgent"]:checked')
    ),
  ].map((b) => b.value);
}

/**
 * Grants the new server to the ticked agents, and only once it connected: a server that failed
 * (or waits for authorization) is granted by nobody; the status line says which agents wait.
 */
async function grantTicked(server, ticked) {
  if (ticked.length === 0) return;
  const agents = ctx.agents().filter((a) => ticked.includes(a.id));
  if (server.status.state !== 'ok') {
    say(
      `${server.name}: saved but not connected, so not given to ${agents.map((a) => a.name).join(', ')}: tick it on the agent's page once it connects`,
      true,
    );
    return;
  }
  for (const agent of agents) {
    if (agent.grants.mcpServers.includes(server.name)) continue;
    await act('UpdateAgent', {
      agent: agent.id,
      definition: { mcpServers: [...agent.grants.mcpServers, server.name] },
    });
  }
}

async function save() {
  const name = form().name.value.trim();
  const { config, errors } = serverConfig(formValues());
  // Read before the dialog closes: the agents the owner ticked, and only those.
  const ticked = tickedAgents();
  if (name === '') errors.unshift({ field: 'name', message: 'the name is required' });
  showErrors(errors);
  if (errors.length > 0) return;
  // Signing in opens a popup, and a popup must be opened by the click; a machine client never signs in.
  const popup =
    config.auth === 'oauth' && config.oauth?.grant !== 'client_credentials' ? openAuthorizationWindow() : null;
  $('add-result').textContent = 'Connecting…';
  let res;
  try {
    res = await act('SetMcpServer', { name, config });
  } catch (err) {
    popup?.close();
    $('add-result').textContent = '';
    // The registry's error names its field (config.…) and never repeats a value.
    showErrors([{ field: 'server', message: /** @type {Error} */ (err).message }]);
    return;
  }
  clearSecrets();
  /** @type {HTMLDialogElement} */ ($('add-dialog')).close();
  const { server } = res;
  if (server.status.state === 'ok') say(`${server.name}: connected, ${server.tools.length} tools`);
  else if (!res.authorizationUrl)
    say(`${server.name}: saved, but ${server.status.summary ?? server.status.error ?? server.status.state}`, true);
  followAuthorization(server.name, res, popup);
  // A move to another origin drops the stored secrets: say which, so the owner enters them again.
  const dropped = droppedSecretsText(res.droppedSecrets);
  if (dropped !== '') say(`${server.name}: ${dropped}`, true);
  await grantTicked(server, ticked);
  await ctx.load();
}

export function initAddServer(context) {
  ctx = context;
  $('server-add').addEventListener('click', () => {
    /** @type {HTMLFormElement} */ ($('add-form')).reset();
    delete form().name.dataset.touched;
    $('add-result').textContent = '';
    showErrors([]);
    showChosenSections();
    drawAgentTicks();
    /** @type {HTMLDialogElement} */ ($('add-dialog')).showModal();
  });
  // Closing the dialog by any way empties what was typed into the secret fields.
  $('add-dialog').addEventListener('close', clearSecrets);
  form().url.addEventListener('input', (e) => {
    if (!form().name.dataset.touched) form().name.value = suggestName(e.target.value);
  });
  form().name.addEventListener('input', (e) => (e.target.dataset.touched = '1'));
  for (const name of CHOICES) {
    for (const radio of document.querySelectorAll(`#add-form input[name="${name}"]`))
      radio.addEventListener('change', showChosenSections);
  }
  form().keyAlg.replaceChildren(...KEY_ALGS.map((alg) => el('option', { value: alg, textContent: alg })));
  // Mistakes before saving are listed in the dialog; a failure after it (the grant) goes to the status line.
  $('add-save').addEventListener('click', () => void run(save));
}
