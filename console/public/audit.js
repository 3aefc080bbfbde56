// The account's audit log (ListAuditEvents), newest first, one page at a time: who (the signer),
// what, when, before and after. The registry never puts a secret in it.
import { ActionError, act } from './api.js';
import { $, el, run } from './ui.js';
import { displayText } from './display-text.js';

let cursor;

function who(e) {
  return e.role === 'system' ? 'registry' : `${e.role} ${e.signer.slice(0, 12)}…`;
}

function entry(e) {
  const change = e.before !== undefined || e.after !== undefined ? `${displayText(JSON.stringify(e.before ?? null))} → ${displayText(JSON.stringify(e.after ?? null))}` : '';
  const li = el(
    'li',
    { className: 'audit' },
    el('span', { className: 'muted', textContent: new Date(e.at).toLocaleString() }),
    el('span', { textContent: who(e) }),
    el('strong', { textContent: e.action }),
    el('span', { textContent: `${e.target.kind} ${displayText(e.target.name)}` }),
    el('code', { className: 'audit-change', textContent: change }),
  );
  li.dataset.action = e.action;
  return li;
}

/** The newest page again (`more`: the next older page, appended). */
export async function loadAudit(more = false) {
  const action = /** @type {HTMLInputElement} */ ($('audit-action')).value.trim();
  let res;
  try {
    res = await act('ListAuditEvents', { limit: 25, ...(action !== '' ? { action } : {}), ...(more && cursor ? { cursor } : {}) });
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
