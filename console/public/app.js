// The web console: the account key, agents and their tools, and the wiring of the views (servers,
// add-server, approvals) to the signed action API and the account's event stream.
import { act, followEvents, forgetKey, importKeyFile, newKey, principal, savedKey, useKey } from './api.js';
import { initAddServer } from './add-server.js';
import { approvalEvents, initApprovals, loadApprovals } from './approvals.js';
import { initInputs, inputEvents, loadInputs } from './inputs.js';
import { initReviews, loadReviews, reviewEvents } from './review.js';
import { initAudit, loadAudit } from './audit.js';
import { initServers, renderServers } from './servers.js';
import { initEndpoint, loadEndpointSettings, renderEndpoint } from './endpoint.js';
import { initSignIn, renderSignIn } from './sign-in.js';
import { $, el, run, say, setText } from './ui.js';

const AGENT_STORAGE = 'mcpx.agent';
/** @type {{ servers: import('./action-types.js').RedactedMcpServer[]; agents: import('./action-types.js').AgentView[] }} */
const state = { servers: [], agents: [] };

function currentAgent() {
  return state.agents.find((a) => a.id === /** @type {HTMLSelectElement} */ ($('agent-select')).value) ?? null;
}

function renderAgents() {
  const select = /** @type {HTMLSelectElement} */ ($('agent-select'));
  const keep = select.value || localStorage.getItem(AGENT_STORAGE) || '';
  select.replaceChildren(...state.agents.map((a) => el('option', { value: a.id, textContent: a.name })));
  if (state.agents.some((a) => a.id === keep)) select.value = keep;
}

async function renderTools() {
  const agent = currentAgent();
  if (!agent) {
    $('tool-index').textContent = 'Pick an agent.';
    return;
  }
  const res = await act('ListAgentTools', { agent: agent.id });
  setText($('tool-index'), res.index || 'No tools: enable a server above.');
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

let loads = 0;
/** The load started last: a load that a newer one overtook settles with it. */
let latest = Promise.resolve();

/**
 * A reload that events ask for: the requests of a burst (one discovery tells of the server and of
 * every agent granted it) are merged into one run, and a request that comes while it runs gets
 * one more run after it, never one per event. Each run costs several actions, and the signer's
 * action rate is limited: a reload per event would have the console refused its own lists.
 */
function coalesced(fn, settleMs = 150) {
  let running = false;
  let again = false;
  let timer;
  const go = async () => {
    timer = undefined;
    running = true;
    again = false;
    try {
      await run(fn);
    } finally {
      running = false;
      if (again) ask();
    }
  };
  const ask = () => {
    if (running) {
      again = true;
      return;
    }
    if (timer === undefined) timer = setTimeout(() => void go(), settleMs);
  };
  return ask;
}

/**
 * Reloads servers and agents. Loads overlap (events, the owner's own actions): an answer older
 * than the latest is dropped, and its caller waits for the latest instead, so whoever awaits a
 * load reads state at least as new as what it asked for (never the state before it).
 */
function load() {
  const mine = loadOnce();
  latest = mine;
  return mine;
}

async function loadOnce() {
  if (!principal()) return;
  const mine = ++loads;
  const [s, a] = await Promise.all([act('ListMcpServers'), act('ListAgents')]);
  if (mine !== loads) return latest;
  state.servers = s.servers;
  state.agents = a.agents;
  renderAgents();
  renderServers();
  await Promise.all([renderTools(), renderEndpoint()]);
}

async function start(stored) {
  useKey(stored);
  $('principal').textContent = `account ${stored.principal.slice(0, 12)}…`;
  $('principal').title = stored.principal;
  say('');
  // The endpoint's URL comes from the deployment's settings before any view shows it.
  await loadEndpointSettings();
  await Promise.all([load(), loadApprovals(), loadInputs(), loadReviews(), loadAudit(), renderSignIn()]);
  const reload = coalesced(load);
  // A server's change (a discovery, a review) may hold or release tool changes, and is audited.
  const reloadServers = coalesced(() => Promise.all([load(), loadReviews(), loadAudit()]));
  await followEvents({
    // (Re)connected: catch up on whatever changed while the stream was down.
    open: () => {
      document.body.dataset.live = 'true';
      void run(() => Promise.all([load(), loadApprovals(), loadInputs(), loadReviews(), loadAudit()]));
    },
    'agent-tools-changed': reload,
    'mcp-servers-changed': reloadServers,
    ...reviewEvents,
    ...approvalEvents,
    ...inputEvents,
  });
}

initServers({ state, load, currentAgent, toggleGrant });
initAddServer({ load, currentAgent });
initApprovals(() => state.agents);
initInputs(() => state.agents);
initReviews(() => void run(() => Promise.all([load(), loadAudit()])));
initAudit();
initEndpoint({ currentAgent });
initSignIn();

$('key-new').addEventListener('click', () => void run(async () => start(await newKey())));
$('key-paste').addEventListener('click', () => /** @type {HTMLDialogElement} */ ($('key-dialog')).showModal());
$('key-use').addEventListener(
  'click',
  () =>
    void run(async () => {
      const text = /** @type {HTMLTextAreaElement} */ ($('key-text')).value;
      /** @type {HTMLTextAreaElement} */ ($('key-text')).value = '';
      let stored;
      try {
        stored = JSON.parse(text);
      } catch {
        throw new Error('the key file is not JSON');
      }
      await start(await importKeyFile(stored));
    }),
);
$('key-forget').addEventListener(
  'click',
  () =>
    void run(async () => {
      await forgetKey();
      location.reload();
    }),
);
$('agent-select').addEventListener('change', () => {
  localStorage.setItem(AGENT_STORAGE, /** @type {HTMLSelectElement} */ ($('agent-select')).value);
  renderServers();
  void run(renderTools);
  void run(renderEndpoint);
});
$('agent-create').addEventListener(
  'click',
  () =>
    void run(async () => {
      const { agent } = await act('CreateAgent', { name: /** @type {HTMLInputElement} */ ($('agent-name')).value.trim(), definition: { mcpServers: [] } });
      localStorage.setItem(AGENT_STORAGE, agent.id);
      /** @type {HTMLInputElement} */ ($('agent-name')).value = '';
      await load();
      /** @type {HTMLSelectElement} */ ($('agent-select')).value = agent.id;
      renderServers();
      await renderTools();
    }),
);

void run(async () => {
  const saved = await savedKey();
  if (saved) await start(saved);
  else say('Create a key (or use the one `mcpx keys new` wrote) to start.');
});
