// The activity view: what the account's agents called (ListCalls, newest first, filtered) and each
// server's figures over the last hour and 24 hours (GetCallFigures). The log holds metadata only:
// never an argument or a result. Live by polling: the event stream carries no call events (a call
// is written by the proxies in batches, a second or so after it ends), so while the view is shown
// and its page visible, the newest page is read again every few seconds and merged in.
import { adoptStyle, el, headRow, sayIn } from './ui.js';

/** How often the live tail reads the newest page, and how often the figures are read again. */
const TAIL_MS = 3_000;
const FIGURES_MS = 30_000;
/** Calls kept on the page at most (older ones are a click on "Older" away, by cursor). */
const MAX_ROWS = 500;
const PAGE = 50;

const STYLE = `
.activity table { width: 100%; border-collapse: collapse; font-size: 0.85rem; }
.activity th, .activity td { text-align: left; padding: 0.2rem 0.4rem; border-top: 1px solid #eef0f3; white-space: nowrap; }
.activity td.tool { white-space: normal; overflow-wrap: anywhere; }
.activity .num { text-align: right; font-variant-numeric: tabular-nums; }
.activity form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 0.5rem 0; }
.activity .scroll { overflow-x: auto; }
`;

/**
 * What the view works with: its context (the signed-action function and the page's filter), the
 * calls shown, the paging cursor, its controls and nodes. Typed so that every `v.act` call is held
 * to the action map like the console's other calls.
 * @typedef {{ act: import('./action-types.js').Act; agent?: string; server?: string }} ActivityContext
 * @typedef {{
 *   ctx: ActivityContext; act: import('./action-types.js').Act; calls: Map<string, any>;
 *   cursor: string | undefined; figuresAt: number; controls: ReturnType<typeof filterControls>;
 *   figuresBody: HTMLElement; callsBody: HTMLElement; empty: HTMLElement; older: HTMLElement; noFigures: HTMLElement;
 * }} ActivityView
 */

const ms = (v) => (v === null || v === undefined ? '–' : `${v} ms`);
const pct = (r) => `${(r * 100).toFixed(r === 0 || r === 1 ? 0 : 1)}%`;

/** One server's row of figures: calls, failed share, p50, p95 over 1 h, then over 24 h. */
function figureRow(s) {
  const cells = (f) => [
    el('td', { className: 'num', textContent: String(f.calls) }),
    el('td', { className: `num${f.failed > 0 ? ' failed' : ''}`, textContent: pct(f.errorRate) }),
    el('td', { className: 'num', textContent: ms(f.p50Ms) }),
    el('td', { className: 'num', textContent: ms(f.p95Ms) }),
  ];
  const tr = el('tr', {}, el('th', { scope: 'row', textContent: s.server }), ...cells(s.lastHour), ...cells(s.lastDay));
  tr.dataset.server = s.server;
  return tr;
}

/** One call: when, who, where, how it ended, how long it took. */
function callRow(c) {
  const result = el('span', {
    className: `chip ${c.outcome === 'ok' ? 'ok' : 'error'}`,
    textContent: c.code,
    title: c.outcome,
  });
  const extra = [
    c.era,
    c.approvalId && `approval ${c.approvalId}`,
    c.inputRequestId && `input ${c.inputRequestId}`,
    c.taskId && `task ${c.taskId}`,
  ]
    .filter(Boolean)
    .join(', ');
  const tr = el(
    'tr',
    {},
    el('td', { textContent: new Date(c.at).toLocaleString(), title: c.at }),
    el('td', { textContent: c.agent.name ?? c.agent.id }),
    el('td', { textContent: c.server ?? '–' }),
    el('td', { className: 'tool', textContent: c.tool }),
    el('td', {}, result),
    el('td', { className: 'num', textContent: `${c.durationMs} ms` }),
    el('td', { textContent: c.run, title: extra }),
  );
  tr.dataset.id = c.id;
  tr.dataset.outcome = c.outcome;
  return tr;
}

const newestFirst = (a, b) => (a.at === b.at ? Number(b.id) - Number(a.id) : a.at < b.at ? 1 : -1);

/** The filter form's fields, pre-filled from `ctx` (an agent's or a server's page). */
function filterControls(ctx) {
  const input = (name, value, label) =>
    el('input', { name, value: value ?? '', placeholder: label, title: label, size: 14 });
  const c = {
    agent: input('agent', ctx.agent, 'agent'),
    server: input('server', ctx.server, 'server'),
    tool: input('tool', '', 'tool'),
    failed: el('input', { type: 'checkbox', name: 'failed' }),
    live: el('input', { type: 'checkbox', name: 'live', checked: true }),
    status: el('span', { className: 'muted' }),
  };
  c.form = el(
    'form',
    {},
    c.agent,
    c.server,
    c.tool,
    el('label', {}, c.failed, ' failed only'),
    el('button', { type: 'submit', textContent: 'Apply' }),
    el('label', {}, c.live, ' live'),
    c.status,
  );
  return c;
}

/**
 * The view's page: the servers' figures, then the filter form and the calls.
 * @param {ActivityView} v
 */
function activityLayout(v) {
  const num = 'num';
  const figures = el(
    'table',
    { className: 'activity-figures' },
    el(
      'thead',
      {},
      headRow(
        ['Server'],
        ...['Calls 1 h', 'Failed', 'p50', 'p95', 'Calls 24 h', 'Failed', 'p50', 'p95'].map((t) => [t, num]),
      ),
    ),
    v.figuresBody,
  );
  const callTable = el(
    'table',
    { className: 'activity-calls' },
    el('thead', {}, headRow(['Time'], ['Agent'], ['Server'], ['Tool'], ['Result'], ['Duration', num], ['Run'])),
    v.callsBody,
  );
  return el(
    'section',
    { className: 'activity' },
    el('h3', { textContent: 'Servers: last hour and last 24 hours' }),
    el('div', { className: 'scroll' }, figures),
    v.noFigures,
    el('h3', { textContent: 'Calls' }),
    v.controls.form,
    el('div', { className: 'scroll' }, callTable),
    v.empty,
    v.older,
  );
}

/**
 * The filters the form says (blank fields left out).
 * @returns {{ agent?: string; server?: string; tool?: string; outcome?: 'failed' }}
 */
function filtersOf(c) {
  /** @type {{ agent?: string; server?: string; tool?: string; outcome?: 'failed' }} */
  const f = {};
  for (const [key, node] of [
    ['agent', c.agent],
    ['server', c.server],
    ['tool', c.tool],
  ]) {
    const value = node.value.trim();
    if (value !== '') f[key] = value;
  }
  if (c.failed.checked) f.outcome = 'failed';
  return f;
}

/**
 * `trim`: the live tail keeps the newest MAX_ROWS; "Older" then goes on from the oldest kept (a cursor is `<ms>.<id>`).
 * @param {ActivityView} v
 */
function renderCalls(v, trim = false) {
  let rows = [...v.calls.values()].sort(newestFirst);
  if (trim && rows.length > MAX_ROWS) {
    for (const c of rows.slice(MAX_ROWS)) v.calls.delete(c.id);
    rows = rows.slice(0, MAX_ROWS);
    const last = rows.at(-1);
    v.cursor = `${Date.parse(last.at)}.${last.id}`;
  }
  v.callsBody.replaceChildren(...rows.map(callRow));
  v.empty.hidden = rows.length > 0;
  v.older.hidden = v.cursor === undefined;
}

/** @param {ActivityView} v */
async function loadFigures(v) {
  const res = await v.act('GetCallFigures', v.ctx.server ? { server: v.ctx.server } : {});
  v.figuresBody.replaceChildren(...res.servers.map(figureRow));
  v.noFigures.hidden = res.servers.length > 0;
  v.figuresAt = Date.now();
}

/**
 * The newest page with the filters; `reset` starts the list afresh (new filters).
 * @param {ActivityView} v
 * @param {boolean} reset
 */
async function loadNewest(v, reset) {
  const res = await v.act('ListCalls', { limit: PAGE, ...filtersOf(v.controls) });
  if (reset) {
    v.calls.clear();
    v.cursor = res.nextCursor;
  }
  for (const c of res.calls) v.calls.set(c.id, c);
  renderCalls(v, !reset);
}

/**
 * The page before the oldest shown.
 * @param {ActivityView} v
 */
async function loadOlder(v) {
  if (v.cursor === undefined) return;
  const res = await v.act('ListCalls', { limit: PAGE, ...filtersOf(v.controls), cursor: v.cursor });
  v.cursor = res.nextCursor;
  for (const c of res.calls) v.calls.set(c.id, c);
  renderCalls(v);
}

/**
 * Runs `fn`, then says whether the view is live, or what went wrong.
 * @param {ActivityView} v
 */
async function guarded(v, fn) {
  const say = (text, isError = false) => sayIn(v.controls.status, text, isError);
  try {
    await fn();
    say(v.controls.live.checked ? 'live' : '');
  } catch (caught) {
    const err = /** @type {any} */ (caught);
    say(err.code === 'forbidden' ? 'The call log is for the account owner and writers.' : err.message, true);
  }
}

/**
 * Mounts the activity view in `root`. `ctx.act` is the console's signed-action function (api.js);
 * `ctx.agent` / `ctx.server` pre-filter it (an agent's or a server's page). Returns
 * `{refresh, unmount}`: unmount stops the live tail and empties `root`.
 * @param {HTMLElement} root
 * @param {ActivityContext} ctx
 */
export async function mountActivity(root, ctx) {
  adoptStyle('.activity table', STYLE);
  const v = {
    ctx,
    act: ctx.act,
    /** @type {Map<string, any>} */
    calls: new Map(),
    cursor: undefined,
    figuresAt: 0,
    controls: filterControls(ctx),
    figuresBody: el('tbody'),
    callsBody: el('tbody'),
    empty: el('p', { className: 'muted', textContent: 'No calls recorded yet with these filters.' }),
    older: el('button', { type: 'button', className: 'quiet', textContent: 'Older' }),
    noFigures: el('p', { className: 'muted', textContent: 'No calls in the last 24 hours.' }),
  };
  let timer;
  let stopped = false;
  root.replaceChildren(activityLayout(v));

  const tick = async () => {
    timer = undefined;
    if (stopped) return;
    if (v.controls.live.checked && document.visibilityState === 'visible') {
      await guarded(v, async () => {
        await loadNewest(v, false);
        if (Date.now() - v.figuresAt >= FIGURES_MS) await loadFigures(v);
      });
    }
    if (!stopped) timer = setTimeout(() => void tick(), TAIL_MS);
  };

  const refresh = () => guarded(v, () => Promise.all([loadFigures(v), loadNewest(v, true)]));

  v.controls.form.addEventListener('submit', (e) => {
    e.preventDefault();
    void refresh();
  });
  v.controls.failed.addEventListener('change', () => void refresh());
  v.older.addEventListener('click', () => void guarded(v, () => loadOlder(v)));

  await refresh();
  timer = setTimeout(() => void tick(), TAIL_MS);
  return {
    refresh,
    unmount() {
      stopped = true;
      clearTimeout(timer);
      root.replaceChildren();
    },
  };
}
