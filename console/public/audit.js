// The account's audit log (ListAuditEvents), newest first, one page at a time: who (the signer),
// what, when, and what changed field by field. The registry never puts a secret in it.
import { ActionError, act } from './api.js';
import { $, el, run } from './ui.js';
import { auditChanges } from './audit-diff.js';

let cursor;

function who(e) {
  return e.role === 'system' ? 'registry' : `${e.role} ${e.signer.slice(0, 12)}…`;
}

/** The change field by field: `field  before → after` rows, only what differs. */
export function changeTable(before, after) {
  const rows = auditChanges(before, after);
  if (rows.length === 0) return null;
  return el(
    'table',
    { className: 'audit-change' },
    el(
      'thead',
      {},
      el(
        'tr',
        {},
        el('th', { textContent: 'field' }),
        el('th', { textContent: 'before' }),
        el('th', { textContent: 'after' }),
      ),
    ),
    el(
      'tbody',
      {},
      ...rows.map((r) => {
        const tr = el(
          'tr',
          {},
          el('td', { className: 'field', textContent: r.field }),
          el('td', { className: 'before', textContent: r.before }),
          el('td', { className: 'after', textContent: r.after }),
        );
        tr.dataset.kind = r.kind;
        return tr;
      }),
    ),
  );
}

/** One entry: when, who, what and on what; its change as a table of fields. */
export function entry(e) {
  const head = el(
    'div',
    { className: 'audit-head' },
    el('span', { className: 'muted', textContent: new Date(e.at).toLocaleString() }),
    el('strong', { textContent: e.action }),
    el('span', { textContent: `${e.target.kind} ${e.target.name}` }),
    el('span', { className: 'muted', textContent: who(e) }),
  );
  const li = el('li', { className: 'audit' }, head);
  const table = e.before !== undefined || e.after !== undefined ? changeTable(e.before, e.after) : null;
  if (table) li.append(table);
  li.dataset.action = e.action;
  return li;
}

/** The newest page again (`more`: the next older page, appended). */
export async function loadAudit(more = false) {
  const action = /** @type {HTMLInputElement} */ ($('audit-action')).value.trim();
  let res;
  try {
    res = await act('ListAuditEvents', {
      limit: 25,
      ...(action !== '' ? { action } : {}),
      ...(more && cursor ? { cursor } : {}),
    });
  } catch (err) {
    // The log is the OWNER's: another signer's console goes on without it.
    if (err instanceof ActionError && err.code === 'forbidden') {
      $('audit').hidden = true;
      return;
    }
    throw err;
  }
  cursor = res.nextCursor;
  const items = res.events.map(entry);
  if (more) $('audit-list').append(...items);
  else $('audit-list').replaceChildren(...items);
  $('audit-empty').hidden = $('audit-list').children.length > 0;
  $('audit-older').hidden = cursor === undefined;
}

export function initAudit() {
  $('audit-refresh').addEventListener('click', () => void run(() => loadAudit()));
  $('audit-older').addEventListener('click', () => void run(() => loadAudit(true)));
  $('audit-action').addEventListener('change', () => void run(() => loadAudit()));
}
