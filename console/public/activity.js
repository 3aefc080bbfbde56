// The activity view: what the account's agents called (ListCalls, newest first, filtered) and each
// server's figures over the last hour and 24 hours (GetCallFigures). The log holds metadata only:
// never an argument or a result. Live by polling: the event stream carries no call events (a call
// is written by the proxies in batches, a second or so after it ends), so while the view is shown
// and its page visible, the newest page is read again every few seconds and merged in.
/* global CSSStyleSheet -- a browser global the console's lint config does not list */
import { el } from './ui.js';

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
 * The view's own rules, as a constructed style sheet: the console's Content Security Policy
 * (`style-src 'self'`) refuses a `<style>` element, not a sheet built through the CSSOM. (The
 * console's style.css may take them over.)
 */
function ensureStyle() {
  if (document.adoptedStyleSheets.some((sheet) => sheet.cssRules[0]?.cssText.startsWith('.activity table'))) return;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(STYLE);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

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

/**
 * Mounts the activity view in `root`. `ctx.act` is the console's signed-action function (api.js);
 * `ctx.agent` / `ctx.server` pre-filter it (an agent's or a server's page). Returns
 * `{refresh, unmount}`: unmount stops the live tail and empties `root`.
 */
export async function mountActivity(root, ctx) {
  ensureStyle();
  const act = ctx.act;
  /** @type {Map<string, any>} */
  const calls = new Map();
  let cursor;
  let timer;
  let figuresAt = 0;
  let stopped = false;

  const input = (name, value, label) =>
    el('input', { name, value: value ?? '', placeholder: label, title: label, size: 14 });
  const agent = input('agent', ctx.agent, 'agent');
  const server = input('server', ctx.server, 'server');
  const tool = input('tool', '', 'tool');
  const failed = el('input', { type: 'checkbox', name: 'failed' });
  const live = el('input', { type: 'checkbox', name: 'live', checked: true });
  const status = el('span', { className: 'muted' });
  const figuresBody = el('tbody');
  const callsBody = el('tbody');
  const empty = el('p', { className: 'muted', textContent: 'No calls recorded yet with these filters.' });
  const older = el('button', { type: 'button', className: 'quiet', textContent: 'Older' });
  const noFigures = el('p', { className: 'muted', textContent: 'No calls in the last 24 hours.' });
  const form = el(
    'form',
    {},
    agent,
    server,
    tool,
    el('label', {}, failed, ' failed only'),
    el('button', { type: 'submit', textContent: 'Apply' }),
    el('label', {}, live, ' live'),
    status,
  );
  const th = (t, cls = '') => el('th', { textContent: t, className: cls });
  root.replaceChildren(
    el(
      'section',
      { className: 'activity' },
      el('h3', { textContent: 'Servers: last hour and last 24 hours' }),
      el(
        'div',
        { className: 'scroll' },
        el(
          'table',
          { className: 'activity-figures' },
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              th('Server'),
              th('Calls 1 h', 'num'),
              th('Failed', 'num'),
              th('p50', 'num'),
              th('p95', 'num'),
              th('Calls 24 h', 'num'),
              th('Failed', 'num'),
              th('p50', 'num'),
              th('p95', 'num'),
            ),
          ),
          figuresBody,
        ),
      ),
      noFigures,
      el('h3', { textContent: 'Calls' }),
      form,
      el(
        'div',
        { className: 'scroll' },
        el(
          'table',
          { className: 'activity-calls' },
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              th('Time'),
              th('Agent'),
              th('Server'),
              th('Tool'),
              th('Result'),
              th('Duration', 'num'),
              th('Run'),
            ),
          ),
          callsBody,
        ),
      ),
      empty,
      older,
    ),
  );

  const filters = () => {
    const f = {};
    for (const [key, node] of [
      ['agent', agent],
      ['server', server],
      ['tool', tool],
    ]) {
      const v = node.value.trim();
      if (v !== '') f[key] = v;
    }
    if (failed.checked) f.outcome = 'failed';
    return f;
  };

  /** `trim`: the live tail keeps the newest MAX_ROWS; "Older" then goes on from the oldest kept (a cursor is `<ms>.<id>`). */
  const render = (trim = false) => {
    let rows = [...calls.values()].sort(newestFirst);
    if (trim && rows.length > MAX_ROWS) {
      for (const c of rows.slice(MAX_ROWS)) calls.delete(c.id);
      rows = rows.slice(0, MAX_ROWS);
      const last = rows.at(-1);
      cursor = `${Date.parse(last.at)}.${last.id}`;
    }
    callsBody.replaceChildren(...rows.map(callRow));
    empty.hidden = rows.length > 0;
    older.hidden = cursor === undefined;
  };

  const say = (text, isError = false) => {
    status.textContent = text;
    status.className = isError ? 'chip error' : 'muted';
  };

  const loadFigures = async () => {
    const f = ctx.server ? { server: ctx.server } : {};
    const res = await act('GetCallFigures', f);
    figuresBody.replaceChildren(...res.servers.map(figureRow));
    noFigures.hidden = res.servers.length > 0;
    figuresAt = Date.now();
  };

  /** The newest page with the filters; `reset` starts the list afresh (new filters). */
  const loadNewest = async (reset) => {
    const res = await act('ListCalls', { limit: PAGE, ...filters() });
    if (reset) {
      calls.clear();
      cursor = res.nextCursor;
    }
    for (const c of res.calls) calls.set(c.id, c);
    render(!reset);
  };

  const guarded = async (fn) => {
    try {
      await fn();
      say(live.checked ? 'live' : '');
    } catch (caught) {
      const err = /** @type {any} */ (caught);
      say(err.code === 'forbidden' ? 'The call log is for the account owner and writers.' : err.message, true);
    }
  };

  const tick = async () => {
    timer = undefined;
    if (stopped) return;
    if (live.checked && document.visibilityState === 'visible') {
      await guarded(async () => {
        await loadNewest(false);
        if (Date.now() - figuresAt >= FIGURES_MS) await loadFigures();
      });
    }
    if (!stopped) timer = setTimeout(() => void tick(), TAIL_MS);
  };

  const refresh = () => guarded(() => Promise.all([loadFigures(), loadNewest(true)]));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void refresh();
  });
  failed.addEventListener('change', () => void refresh());
  older.addEventListener(
    'click',
    () =>
      void guarded(async () => {
        if (cursor === undefined) return;
        const res = await act('ListCalls', { limit: PAGE, ...filters(), cursor });
        cursor = res.nextCursor;
        for (const c of res.calls) calls.set(c.id, c);
        render();
      }),
  );

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
