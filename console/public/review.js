// Tool changes a pinned server's discovery held for review (ListToolChanges): each with its
// description as a word diff, its schema and annotation changes and its warnings, and Accept /
// Reject. Kept live by tool-review-requested and mcp-servers-changed; ListToolChanges is the truth.
import { act } from './api.js';
import { displayText } from './display-text.js';
import { $, el, run, say } from './ui.js';

let changes = [];
let onDecided = () => undefined;

// A reviewer sees every invisible or direction-changing character as <U+XXXX> (displayText).
const visible = displayText;

const show = (v) => (v === undefined ? '(none)' : visible(JSON.stringify(v)));

function schemaLine(c) {
  const what = c.aspect === 'keyword' ? (c.keyword ?? 'keyword') : c.aspect;
  const at = c.path === '' ? '(root)' : c.path;
  const text =
    c.kind === 'added'
      ? `+ ${at} ${what}${c.after !== undefined ? ` ${show(c.after)}` : ''}`
      : c.kind === 'removed'
        ? `- ${at} ${what}${c.before !== undefined ? ` ${show(c.before)}` : ''}`
        : `~ ${at} ${what}: ${show(c.before)} → ${show(c.after)}`;
  return el('li', { className: `schema-${c.kind}`, textContent: text });
}

function descriptionDiff(parts) {
  if (parts.length === 0) return el('p', { className: 'muted', textContent: '(empty)' });
  return el(
    'p',
    { className: 'text-diff' },
    ...parts.map((p) =>
      el(p.op === 'added' ? 'ins' : p.op === 'removed' ? 'del' : 'span', { textContent: visible(p.text) }),
    ),
  );
}

async function decide(c, type, buttons) {
  for (const b of buttons) b.disabled = true;
  await run(async () => {
    try {
      await act(type, { server: c.server, tool: c.tool, cid: c.cid });
      say(
        `${c.server}/${visible(c.tool)}: ${type === 'AcceptToolChange' ? 'accepted, agents get it now' : 'rejected'}`,
      );
    } finally {
      await loadReviews();
      onDecided();
    }
  });
}

function changeItem(c) {
  const accept = el('button', { type: 'button', className: 'primary', textContent: 'Accept' });
  const reject = el('button', { type: 'button', textContent: 'Reject' });
  accept.addEventListener('click', () => void decide(c, 'AcceptToolChange', [accept, reject]));
  reject.addEventListener('click', () => void decide(c, 'RejectToolChange', [accept, reject]));
  if (c.status === 'rejected') reject.disabled = true;
  const head = el(
    'div',
    { className: 'review-row' },
    el('strong', { textContent: `${c.server}/${visible(c.tool)}` }),
    el('span', {
      className: 'muted',
      textContent: `${c.kind === 'new' ? 'new tool' : 'changed'} · ${c.withheld ? 'withheld from agents' : 'agents keep the accepted contract'}`,
    }),
    el('span', { className: 'actions-always' }, accept, reject),
  );
  const li = el(
    'li',
    { className: 'review' },
    head,
    el('p', {
      className: 'muted cid',
      textContent: [
        `held contract ${c.cid}`,
        c.previousCid ? `accepted contract (agents have now) ${c.previousCid}` : 'no accepted contract',
        ...(c.documentCid ? [`tool document once accepted ${c.documentCid}`] : []),
      ].join(' · '),
    }),
  );
  li.dataset.tool = c.tool;
  li.dataset.server = c.server;
  if (c.warnings.length > 0)
    li.append(
      el(
        'ul',
        { className: 'warnings' },
        ...c.warnings.map((w) =>
          el('li', { className: 'chip error', textContent: `${w.code} (${w.field}): ${visible(w.message)}` }),
        ),
      ),
    );
  for (const reason of c.incompatibility ?? [])
    li.append(el('p', { className: 'muted', textContent: `incompatible: ${visible(reason)}` }));
  if (c.diff.title)
    li.append(el('p', { textContent: `title: ${show(c.diff.title.before)} → ${show(c.diff.title.after)}` }));
  if (c.diff.descriptionChanged || c.kind === 'new')
    li.append(el('h3', { textContent: 'Description' }), descriptionDiff(c.diff.description));
  if (c.diff.inputSchema.length > 0)
    li.append(
      el('h3', { textContent: 'Input schema' }),
      el('ul', { className: 'schema-diff' }, ...c.diff.inputSchema.map(schemaLine)),
    );
  if (c.diff.outputSchema.length > 0)
    li.append(
      el('h3', { textContent: 'Output schema' }),
      el('ul', { className: 'schema-diff' }, ...c.diff.outputSchema.map(schemaLine)),
    );
  if (c.diff.annotations.length > 0)
    li.append(
      el('h3', { textContent: 'Annotations' }),
      el(
        'ul',
        { className: 'schema-diff' },
        ...c.diff.annotations.map((a) => el('li', { textContent: `~ ${a.key}: ${show(a.before)} → ${show(a.after)}` })),
      ),
    );
  return li;
}

function render() {
  $('reviews-empty').hidden = changes.length > 0;
  $('review-count').textContent = changes.length > 0 ? String(changes.length) : '';
  $('review-list').replaceChildren(...changes.map(changeItem));
}

/** Reads the held changes again (pending ones). */
export async function loadReviews() {
  changes = (await act('ListToolChanges')).changes;
  render();
}

/** `decided()` runs after a decision (the page reloads what a review changes). */
export function initReviews(decided) {
  onDecided = decided;
}

/** Event-stream handlers of this view. */
export const reviewEvents = {
  'tool-review-requested': () => void run(loadReviews),
};
