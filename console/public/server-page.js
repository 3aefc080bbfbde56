// One server's page (`#/servers/<name>`): its status in words and the failure as it came, its
// history (the audit log's entries about it), its tools with their permission levels, its pin
// and held changes, and its activity.
import { act } from './api.js';
import { changeTable } from './audit.js';
import { hostOf, serverActions, serverChips, statusText } from './servers.js';
import { toolList } from './tool-list.js';
import { $, el, link } from './ui.js';

/** How many audit entries of the server its page shows. */
const HISTORY = 10;

function statusBlock(s) {
  const facts = [];
  if (s.status.checkedAt) facts.push(`checked ${new Date(s.status.checkedAt).toLocaleString()}`);
  if (s.status.lastOkAt) facts.push(`last connected ${new Date(s.status.lastOkAt).toLocaleString()}`);
  if ((s.status.failures ?? 0) > 0)
    facts.push(`${s.status.failures} failed ${s.status.failures === 1 ? 'try' : 'tries'} in a row`);
  if (s.status.transport) facts.push(`transport ${s.status.transport}`);
  const box = el('div', { className: 'status-block' });
  if (s.status.state === 'ok')
    box.append(el('p', { className: 'ok-text', textContent: `Connected: ${s.tools.length} tools.` }));
  else if (s.status.state === 'unknown') box.append(el('p', { className: 'muted', textContent: 'Not checked yet.' }));
  else box.append(el('p', { className: 'error-text status-summary', textContent: statusText(s) }));
  if (facts.length > 0) box.append(el('p', { className: 'muted', textContent: facts.join(' · ') }));
  // The failure as it came (bounded, no secret): for whoever wants the detail, never in the way.
  if (s.status.summary !== undefined && s.status.error !== undefined)
    box.append(
      el(
        'details',
        { className: 'raw-error' },
        el('summary', { textContent: 'Details' }),
        el('pre', { textContent: s.status.error }),
      ),
    );
  return box;
}

function pinBlock(s) {
  if (s.pin === undefined || s.pin === 'off')
    return el('p', {
      className: 'muted',
      textContent: 'Not pinned: tool changes reach agents as the server makes them.',
    });
  const box = el(
    'div',
    {},
    el('p', {
      textContent: `Pinned (${s.pin}): changed tools wait for a review${s.pin === 'strict' ? ' and are withheld meanwhile' : ''}.`,
    }),
  );
  const held = s.status.heldTools ?? [];
  if (held.length > 0) {
    box.append(
      el(
        'ul',
        { className: 'held' },
        ...held.map((t) =>
          el('li', {
            textContent: `${t.name}: held contract ${t.cid} (${t.state}${t.withheld ? ', withheld from agents' : ', agents keep the accepted contract'})`,
          }),
        ),
      ),
    );
    box.append(link('#/reviews', 'Review the held changes'));
  }
  return box;
}

async function historyBlock(s) {
  const list = el('ul', { className: 'history', id: 'server-history' });
  try {
    const { events } = await act('ListAuditEvents', { targetKind: 'server', target: s.name, limit: HISTORY });
    for (const e of events) {
      const table = changeTable(e.before, e.after);
      list.append(
        el(
          'li',
          {},
          el('span', { className: 'muted', textContent: new Date(e.at).toLocaleString() }),
          ' ',
          el('strong', { textContent: e.action }),
          ...(table ? [table] : []),
        ),
      );
    }
    if (events.length === 0) list.append(el('li', { className: 'muted', textContent: 'No changes recorded.' }));
  } catch {
    // The log is the owner's: another signer sees the page without it.
    list.append(el('li', { className: 'muted', textContent: 'The history is shown to the account owner.' }));
  }
  return list;
}

/** Draws the page of server `name` from `servers` (ListMcpServers), with its history and activity. */
export async function renderServerPage(name, servers, mountActivity) {
  const body = $('server-page-body');
  const s = servers.find((x) => x.name === name);
  // A reload draws the open page again: what its search holds stays (a person may be typing).
  const samePage = $('server-page').dataset.server === name;
  $('server-page').dataset.server = name;
  if (!s) {
    body.replaceChildren(
      el('p', { textContent: `No server ${name} in this account.` }),
      link('#/servers', 'All servers'),
    );
    return;
  }
  const search = el('input', { type: 'search', placeholder: 'Search its tools', id: 'server-tool-search' });
  search.setAttribute('aria-label', `search the tools of ${s.name}`);
  const tools = toolList(s);
  tools.id = 'server-page-tools';
  search.dataset.filter = tools.id;
  // The list shown now, not the one drawn with the search: a permission change draws it again.
  const filter = () => {
    const q = search.value.trim().toLowerCase();
    const shown = $('server-page-tools') ?? tools;
    for (const li of /** @type {HTMLElement[]} */ ([...shown.children]))
      li.classList.toggle('filtered-out', q !== '' && !(li.textContent ?? '').toLowerCase().includes(q));
  };
  search.addEventListener('input', filter);
  const activity = el('div', { id: 'server-activity' });
  const history = await historyBlock(s);
  // Read once the history is in, just before the page is replaced: what was typed while it
  // loaded is kept too (read before the wait, a search cleared meanwhile came back).
  const old = samePage ? /** @type {HTMLInputElement | null} */ ($('server-tool-search')) : null;
  search.value = old?.value ?? '';
  const typing = old !== null && document.activeElement === old;
  body.replaceChildren(
    el('div', { className: 'page-head' }, el('h2', { textContent: s.name }), serverChips(s), serverActions(s)),
    el('p', { className: 'muted url', textContent: `${s.url} (${hostOf(s.url)}${s.builtin ? ', built-in' : ''})` }),
    el('h3', { textContent: 'Status' }),
    statusBlock(s),
    el('h3', { textContent: `Tools (${s.tools.length})` }),
    el('div', { className: 'filters' }, search),
    tools,
    el('h3', { textContent: 'Pin' }),
    pinBlock(s),
    el('h3', { textContent: 'Activity' }),
    activity,
    el('h3', { textContent: 'History' }),
    history,
  );
  // The box a person is typing in goes with the page it was on: the caret moves to the new one,
  // where it was, or the keys that follow the reload went nowhere.
  if (typing) {
    search.focus();
    search.setSelectionRange(old.selectionStart, old.selectionEnd, old.selectionDirection ?? undefined);
  }
  filter();
  await mountActivity(activity, { server: s.name });
}

/**
 * Draws the open server page's tool list again (a permission change, a reload), keeping the
 * search and the keyboard focus where they were.
 */
export function redrawServerPageTools(servers) {
  const old = $('server-page-tools');
  const name = $('server-page').dataset.server;
  const s = servers.find((x) => x.name === name);
  if (!old || !s) return;
  const focused = old.contains(document.activeElement)
    ? /** @type {HTMLElement} */ (document.activeElement).dataset.focusKey
    : undefined;
  const tools = toolList(s);
  tools.id = 'server-page-tools';
  old.replaceWith(tools);
  const search = /** @type {HTMLInputElement | null} */ ($('server-tool-search'));
  search?.dispatchEvent(new window.Event('input'));
  if (focused !== undefined)
    [.../** @type {NodeListOf<HTMLElement>} */ (tools.querySelectorAll('[data-focus-key]'))]
      .find((n) => n.dataset.focusKey === focused)
      ?.focus();
}
