// The tasks room: the account's brokered tasks (ListTasks, newest first; docs/tasks.md#people),
// running and finished, per agent, with their state and the server's last status message; a
// running task has a Cancel button (CancelTask: the server is asked, the task ends cancelled, the
// audit log records who). Never a task's arguments or result: those belong to the caller that
// made the call. Live by polling while the room is shown: task events go to runtimes over NATS,
// not to the browser's event stream.
import { adoptStyle, el, headRow, sayIn } from './ui.js';

/** How often the shown list is read again while the room is visible. */
const REFRESH_MS = 3_000;
/** Tasks read at most (the task service's page). */
const LIMIT = 200;

const STYLE = `
.tasks table { width: 100%; border-collapse: collapse; font-size: 0.85rem; }
.tasks th, .tasks td { text-align: left; padding: 0.2rem 0.4rem; border-top: 1px solid #eef0f3; vertical-align: top; }
.tasks td.status { overflow-wrap: anywhere; max-width: 28rem; }
.tasks form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 0.5rem 0; }
.tasks .scroll { overflow-x: auto; }
`;

const OPEN = new Set(['working', 'input_required']);
const CHIP = {
  working: 'auth',
  input_required: 'auth',
  completed: 'ok',
  failed: 'error',
  cancelled: '',
  expired: 'error',
};

/** When a time was, shown in the reader's zone with the exact instant as its title. */
const when = (iso) => el('td', { textContent: iso ? new Date(iso).toLocaleString() : '–', title: iso ?? '' });

/** What the task says now: the server's status message, or why it ended. */
function statusText(t) {
  if (t.state === 'input_required')
    return `waiting for an answer${t.inputRequestId ? ` (input request ${t.inputRequestId}, in Questions)` : ''}`;
  if (t.error) return `${t.error.code}: ${t.error.message}`;
  return t.statusMessage ?? '';
}

/** One task's row; a running one has a Cancel button (`onCancel(task, button)`). */
function taskRow(t, agentName, onCancel) {
  const cells = [
    el('td', { textContent: t.tool }),
    el('td', { textContent: agentName(t.agent) }),
    el('td', {}, el('span', { className: `chip ${CHIP[t.state] ?? ''}`.trim(), textContent: t.state })),
    el('td', { className: 'status', textContent: statusText(t) }),
    when(t.createdAt),
    when(t.finishedAt),
    el('td', { textContent: t.id, title: `run ${t.run} · server ${t.server} · ${t.dialect}` }),
  ];
  const actions = el('td');
  if (OPEN.has(t.state)) {
    const button = el('button', {
      type: 'button',
      textContent: 'Cancel',
      title: 'Ask the server to cancel this task',
    });
    button.addEventListener('click', () => void onCancel(t, button));
    actions.append(button);
  }
  const tr = el('tr', {}, ...cells, actions);
  tr.dataset.task = t.id;
  tr.dataset.state = t.state;
  return tr;
}

/** The room's controls and its page: the filter form, then the task list. */
function taskLayout() {
  const v = {
    agentPick: el('select', { name: 'agent', title: 'agent' }, el('option', { value: '', textContent: 'All agents' })),
    openOnly: el('input', { type: 'checkbox', name: 'open' }),
    status: el('span', { className: 'muted' }),
    body: el('tbody'),
    empty: el('p', {
      className: 'muted',
      textContent:
        'No tasks. A call of a task tool that outlives the call bound shows here while it runs, and after it ended.',
    }),
  };
  v.form = el(
    'form',
    {},
    v.agentPick,
    el('label', {}, v.openOnly, ' running only'),
    el('button', { type: 'submit', textContent: 'Refresh' }),
    v.status,
  );
  const head = headRow(['Tool'], ['Agent'], ['State'], ['Status'], ['Started'], ['Ended'], ['Task'], ['']);
  const table = el('table', { className: 'task-list' }, el('thead', {}, head), v.body);
  v.section = el('section', { className: 'tasks' }, v.form, el('div', { className: 'scroll' }, table), v.empty);
  return v;
}

/** Let only one mounted view poll: mounting again (re-entering the room) stops the one before. */
let current;

/**
 * Mounts the tasks view in `root`. `ctx.act` is the console's signed-action function (api.js).
 * Returns `{refresh, unmount}`.
 * @param {HTMLElement} root
 * @param {{ act: import('./action-types.js').Act }} ctx
 */
export async function mountTasks(root, ctx) {
  current?.unmount();
  adoptStyle('.tasks table', STYLE);
  const act = ctx.act;
  let agents = [];
  let timer;
  let stopped = false;
  const v = taskLayout();
  root.replaceChildren(v.section);

  const say = (text, isError = false) => sayIn(v.status, text, isError);
  const agentName = (id) => agents.find((a) => a.id === id)?.name ?? id;

  const cancel = async (t, button) => {
    button.disabled = true;
    try {
      const { task } = await act('CancelTask', { task: t.id });
      say(`${t.tool}: ${task.state === 'cancelled' ? 'cancelled' : `already ${task.state}`}`);
    } catch (caught) {
      say(/** @type {Error} */ (caught).message, true);
    }
    await load();
  };

  /** Reads the tasks again (the task service is the truth) and draws them. */
  const load = async () => {
    try {
      const agent = v.agentPick.value;
      const { tasks } = await act('ListTasks', { limit: LIMIT, ...(agent !== '' ? { agent } : {}) });
      const shown = v.openOnly.checked ? tasks.filter((t) => OPEN.has(t.state)) : tasks;
      v.body.replaceChildren(...shown.map((t) => taskRow(t, agentName, cancel)));
      v.empty.hidden = shown.length > 0;
      say(`${tasks.filter((t) => OPEN.has(t.state)).length} running · updated ${new Date().toLocaleTimeString()}`);
    } catch (caught) {
      const err = /** @type {any} */ (caught);
      say(err.code === 'forbidden' ? 'Tasks are shown to the account owner and writers.' : err.message, true);
    }
  };

  const tick = async () => {
    timer = undefined;
    if (stopped || !root.isConnected) return;
    // Read only while the room is on screen and the page visible.
    if (root.offsetParent !== null && document.visibilityState === 'visible') await load();
    if (!stopped) timer = setTimeout(() => void tick(), REFRESH_MS);
  };

  v.form.addEventListener('submit', (e) => {
    e.preventDefault();
    void load();
  });
  v.agentPick.addEventListener('change', () => void load());
  v.openOnly.addEventListener('change', () => void load());

  try {
    agents = (await act('ListAgents')).agents;
  } catch {
    agents = [];
  }
  v.agentPick.append(...agents.map((a) => el('option', { value: a.id, textContent: a.name })));
  await load();
  timer = setTimeout(() => void tick(), REFRESH_MS);
  const view = {
    refresh: load,
    unmount() {
      stopped = true;
      clearTimeout(timer);
      if (current === view) current = undefined;
    },
  };
  current = view;
  return view;
}
