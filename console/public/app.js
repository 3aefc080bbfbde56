// The web console: the account key, the rooms (router.js: servers, a server's page, agents, an
// agent's page, approvals, questions, reviews, tasks, activity, audit, endpoint, signers), and the
// wiring of each view to the signed action API and the account's event stream.
import { act, followEvents, forgetKey, importKeyFile, newKey, principal, savedKey, useKey } from './api.js';
import { initAddServer } from './add-server.js';
import { approvalEvents, initApprovals, loadApprovals } from './approvals.js';
import { initInputs, inputEvents, loadInputs } from './inputs.js';
import { initReviews, loadReviews, reviewEvents } from './review.js';
import { initAudit, loadAudit } from './audit.js';
import { initServers, renderServers } from './servers.js';
import { initEndpoint, loadEndpointSettings, renderEndpoint } from './endpoint.js';
import { initSignIn, renderSignIn } from './sign-in.js';
import { redrawServerPageTools, renderServerPage } from './server-page.js';
import { renderAgentList, renderAgentPage } from './agent-page.js';
import { currentRoute, go, initRouter, setSignedIn } from './router.js';
import { $, el, link, run, say, wireFilters } from './ui.js';

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
  renderAgentList(state.agents, state.servers);
}

/** Makes `id` the current agent (the header's choice, kept in this browser). */
function pickAgent(id) {
  const select = /** @type {HTMLSelectElement} */ ($('agent-select'));
  if (!state.agents.some((a) => a.id === id) || select.value === id) return;
  select.value = id;
  localStorage.setItem(AGENT_STORAGE, id);
  renderServers();
}

/** The activity view (activity.js) in `root`, narrowed to a server or an agent when given. */
async function mountActivity(root, filter = {}) {
  const { mountActivity: mount } = await import('./activity.js');
  await mount(root, { act, ...filter });
}

/** Draws the page the address names, when it is one that shows loaded state. */
async function renderPage(route = currentRoute()) {
  if (!principal()) return;
  if (route.room === 'server') await renderServerPage(route.param, state.servers, mountActivity);
  else if (route.room === 'agent') {
    const agent = state.agents.find((a) => a.id === route.param || a.name === route.param);
    if (agent) pickAgent(agent.id);
    await renderAgentPage(route.param, { agents: state.agents, servers: state.servers, toggleGrant, mountActivity });
  }
}

/** Runs when a room is shown: loads what only that room shows. */
function enter(route) {
  if (!principal()) return;
  if (route.room === 'activity') void run(() => mountActivity($('activity-root')));
  else if (route.room === 'tasks')
    void run(async () => {
      const { mountTasks } = await import('./tasks.js');
      await mountTasks($('tasks-root'), { act });
    });
  else if (route.room === 'signers') void run(loadSignIns);
  else void run(() => renderPage(route));
}

/** Sign-in requests waiting for the owner (ListSignInRequests): the signers room and its count. */
async function loadSignIns() {
  const { signIns } = await act('ListSignInRequests');
  $('sign-in-count').textContent = signIns.length > 0 ? String(signIns.length) : '';
  $('sign-ins-empty').hidden = signIns.length > 0;
  $('sign-in-list').replaceChildren(
    ...signIns.map((s) =>
      el(
        'li',
        {},
        link(`#sign-in=${s.id}`, `${s.client.name} (unverified name, ${s.client.host})`),
        el('span', {
          className: 'muted',
          textContent: ` for agent ${s.agent.name} · expires ${new Date(s.expiresAt).toLocaleTimeString()}`,
        }),
      ),
    ),
  );
}

/** Grants or withdraws `server` for `agent` (the current one unless named). */
async function toggleGrant(server, on, agent = currentAgent()) {
  if (!agent) return;
  const grants = on
    ? [...new Set([...agent.grants.mcpServers, server])]
    : agent.grants.mcpServers.filter((g) => g !== server);
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

/** The load loadRunning now, and the one asked for while it runs (at most one waits). */
let loadRunning = null;
let loadQueued = null;

/**
 * Reloads servers and agents. At most one load runs at a time: whoever asks while one runs gets
 * the one run after it (which starts after their ask, so it reads at least what they changed),
 * shared by everyone who asks meanwhile. Each load costs several actions, and the signer's action
 * rate is limited: a load per ask had a busy page refused its own lists.
 */
function load() {
  if (loadRunning === null) {
    const mine = loadOnce().finally(() => {
      if (loadRunning === mine) loadRunning = null;
    });
    loadRunning = mine;
    latest = mine;
    return mine;
  }
  loadQueued ??= loadRunning
    .catch(() => undefined)
    .then(() => {
      loadQueued = null;
      return load();
    });
  latest = loadQueued;
  return loadQueued;
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
  // A new account has nothing yet: the servers room says where to start.
  $('first-run').hidden = !(state.servers.length === 0 && state.agents.length === 0);
  await Promise.all([renderPage(), renderEndpoint()]);
}

/** After a permission change: the server list and, when open, the server page's tools. */
function renderServerViews() {
  renderServers();
  if (currentRoute().room === 'server') redrawServerPageTools(state.servers);
}

async function start(stored) {
  useKey(stored);
  $('principal').textContent = `account ${stored.principal.slice(0, 12)}…`;
  $('principal').title = stored.principal;
  say('');
  // The endpoint's URL comes from the deployment's settings before any view shows it.
  await loadEndpointSettings();
  await Promise.all([load(), loadApprovals(), loadInputs(), loadReviews(), loadAudit(), renderSignIn(), loadSignIns()]);
  setSignedIn(true);
  const reload = coalesced(load);
  // A server's change (a discovery, a review) may hold or release tool changes, and is audited.
  const reloadServers = coalesced(() => Promise.all([load(), loadReviews(), loadAudit()]));
  await followEvents({
    // (Re)connected: catch up on whatever changed while the stream was down.
    open: () => {
      document.body.dataset.live = 'true';
      void run(() => Promise.all([load(), loadApprovals(), loadInputs(), loadReviews(), loadAudit(), loadSignIns()]));
    },
    'agent-tools-changed': reload,
    'mcp-servers-changed': reloadServers,
    ...reviewEvents,
    ...approvalEvents,
    ...inputEvents,
  });
}

initServers({ state, load, currentAgent, toggleGrant, render: renderServerViews });
initAddServer({ load, agents: () => state.agents });
initApprovals(() => state.agents);
initInputs(() => state.agents);
initReviews(() => void run(() => Promise.all([load(), loadAudit()])));
initAudit();
initEndpoint({ currentAgent });
initSignIn();

initRouter(enter);
wireFilters();
for (const id of ['key-new', 'welcome-key'])
  $(id).addEventListener('click', () => void run(async () => start(await newKey())));
for (const id of ['key-paste', 'welcome-paste'])
  $(id).addEventListener('click', () => /** @type {HTMLDialogElement} */ ($('key-dialog')).showModal());
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
  const id = /** @type {HTMLSelectElement} */ ($('agent-select')).value;
  localStorage.setItem(AGENT_STORAGE, id);
  renderServers();
  // On an agent's page the header's choice opens that agent's page.
  if (currentRoute().room === 'agent') go(`#/agents/${encodeURIComponent(id)}`);
  void run(renderEndpoint);
});
$('agent-create').addEventListener(
  'click',
  () =>
    void run(async () => {
      // Where the person was when they asked: the new agent's page opens only if they are still there.
      const from = location.hash;
      const { agent } = await act('CreateAgent', {
        name: /** @type {HTMLInputElement} */ ($('agent-name')).value.trim(),
        definition: { mcpServers: [] },
      });
      localStorage.setItem(AGENT_STORAGE, agent.id);
      /** @type {HTMLInputElement} */ ($('agent-name')).value = '';
      await load();
      /** @type {HTMLSelectElement} */ ($('agent-select')).value = agent.id;
      renderServers();
      if (location.hash === from) go(`#/agents/${encodeURIComponent(agent.id)}`);
    }),
);

void run(async () => {
  const saved = await savedKey();
  if (saved) await start(saved);
  else setSignedIn(false);
});
