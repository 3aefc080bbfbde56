// Small DOM helpers shared by the console's views. Text is always set as text, never as HTML, and
// shown through displayText: remote strings (names, descriptions, errors, arguments, questions)
// carry no bidi override or invisible character the reader cannot see.
/* global CSSStyleSheet -- a browser global the console's lint config does not list */
import { displayText } from './display-text.js';

export const $ = (id) => document.getElementById(id);

/** Properties that a person reads: shown escaped. Others (`value`, `href`, …) are data, kept exact. */
const SHOWN_PROPS = new Set(['textContent', 'title', 'placeholder']);

/** `el('button', {className: 'quiet', textContent: 'Close'}, child…)`; string children are text. */
export function el(tag, props = {}, ...children) {
  const shown = Object.fromEntries(
    Object.entries(props).map(([k, v]) => [k, SHOWN_PROPS.has(k) && typeof v === 'string' ? displayText(v) : v]),
  );
  const node = Object.assign(document.createElement(tag), shown);
  node.append(...children.map((c) => (typeof c === 'string' ? displayText(c) : c)));
  return node;
}

/** Sets a node's text, shown escaped. */
export function setText(node, text) {
  node.textContent = displayText(text);
}

/** The status line under the page. */
export function say(text, isError = false) {
  setText($('message'), text);
  $('message').className = isError ? 'chip error' : 'muted';
}

/** A view's own status line: `text`, as an error chip when `isError`. */
export function sayIn(node, text, isError = false) {
  node.textContent = text;
  node.className = isError ? 'chip error' : 'muted';
}

/** A table's header row of `[title, class]` cells. */
export function headRow(...cells) {
  return el('tr', {}, ...cells.map(([t, cls = '']) => el('th', { textContent: t, className: cls })));
}

/**
 * Adds a view's own rules once, as a constructed style sheet (the console's Content Security
 * Policy, `style-src 'self'`, refuses a `<style>` element, not a sheet built through the CSSOM).
 * `marker` is the start of its first rule, which tells the sheet is already there.
 */
export function adoptStyle(marker, css) {
  if (document.adoptedStyleSheets.some((sheet) => sheet.cssRules[0]?.cssText.startsWith(marker))) return;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(css);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
}

/** Runs an action of the page; its error goes to the status line. */
export async function run(fn) {
  try {
    await fn();
  } catch (err) {
    say(/** @type {Error} */ (err).message, true);
  }
}

/** A link within the console (`#/servers/acme`); its text shown escaped. */
export function link(href, text, className = '') {
  return el('a', { href, textContent: text, ...(className ? { className } : {}) });
}

/** Whether `li` matches the query `q` (lower case): its text, and what it names in `data-search`. */
function matches(li, q) {
  if (q === '') return true;
  return `${li.textContent ?? ''} ${li.dataset.search ?? ''}`.toLowerCase().includes(q);
}

/**
 * The search box and choice filters of every list: an `input[data-filter=LIST]` hides the items
 * of list `LIST` whose text does not hold what was typed; a `select[data-filter-state=LIST]`
 * those whose `data-state` (or `data-tags`) is not the one chosen. Lists are drawn again often:
 * the filter follows each new drawing, and a list with items none of which match says so.
 */
export function wireFilters(root = document) {
  const apply = (listId) => {
    const list = $(listId);
    if (!list) return;
    const q = [...root.querySelectorAll(`input[data-filter="${listId}"]`)]
      .map((i) => /** @type {HTMLInputElement} */ (i).value.trim().toLowerCase())
      .join(' ')
      .trim();
    const states = [...root.querySelectorAll(`select[data-filter-state="${listId}"]`)]
      .map((s) => /** @type {HTMLSelectElement} */ (s).value)
      .filter((v) => v !== '');
    let shown = 0;
    for (const li of /** @type {HTMLElement[]} */ ([...list.children])) {
      const tags = `${li.dataset.state ?? ''} ${li.dataset.tags ?? ''}`.split(' ');
      const keep = matches(li, q) && states.every((s) => tags.includes(s));
      li.classList.toggle('filtered-out', !keep);
      if (keep) shown += 1;
    }
    let none = $(`${listId}-none`);
    if (!none) {
      none = el('p', { id: `${listId}-none`, className: 'muted filter-none', textContent: 'Nothing matches.' });
      list.after(none);
    }
    none.hidden = !(list.children.length > 0 && shown === 0);
  };
  const ids = new Set(
    [...root.querySelectorAll('[data-filter], [data-filter-state]')].map(
      (n) => /** @type {HTMLElement} */ (n).dataset.filter ?? /** @type {HTMLElement} */ (n).dataset.filterState ?? '',
    ),
  );
  for (const id of ids) {
    const list = $(id);
    if (!list) continue;
    for (const control of root.querySelectorAll(`[data-filter="${id}"], [data-filter-state="${id}"]`)) {
      control.addEventListener('input', () => apply(id));
      control.addEventListener('change', () => apply(id));
    }
    new window.MutationObserver(() => apply(id)).observe(list, { childList: true });
  }
}
