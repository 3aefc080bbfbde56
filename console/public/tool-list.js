// The tools of one server in the server list, each with its permission level and a control to
// override it (SetToolPermission, by the tool's remote name). Built-in and custom servers are
// treated alike. A reply updates the row at once; the mcp-servers-changed event that follows
// reloads the list, which stays the source of truth. A failed change is shown next to its tool.
import { act } from './api.js';
import {
  InheritedLevels,
  choiceOf,
  permissionOptions,
  setPermissionFields,
  toolKey,
  withPermission,
} from './permissions.js';
import { $, el, setText } from './ui.js';

const inherited = new InheritedLevels();
/** Tool key → the choice in flight and its turn: when changes overlap, the latest one wins. */
const pending = new Map();
/** Tool key → the message of its last failed change, until its next change. */
const errors = new Map();
let turns = 0;
let ctx = null; // {state, render}

/** `state.servers` is the list shown; `render()` draws it again. */
export function initToolList(context) {
  ctx = context;
}

async function change(serverName, tool, choice) {
  const key = toolKey(serverName, tool.name);
  const turn = ++turns;
  const latest = () => pending.get(key)?.turn === turn;
  pending.set(key, { choice, turn });
  errors.delete(key);
  ctx.render();
  try {
    const reply = await act('SetToolPermission', setPermissionFields(serverName, tool.name, choice));
    inherited.learn(reply);
    const server = ctx.state.servers.find((s) => s.name === serverName);
    if (latest() && server)
      server.tools = server.tools.map((t) => (t.name === tool.name ? withPermission(t, reply) : t));
  } catch (err) {
    if (latest()) errors.set(key, `not changed: ${/** @type {Error} */ (err).message}`);
  } finally {
    if (latest()) {
      pending.delete(key);
      ctx.render();
    }
  }
}

let errorIds = 0;

function permissionControl(s, t) {
  const key = toolKey(s.name, t.name);
  const options = permissionOptions(inherited.of(s.name, t)).map((o) =>
    el('option', { value: o.value, textContent: o.label }),
  );
  const select = el('select', { className: 'permission' }, ...options);
  select.value = pending.get(key)?.choice ?? choiceOf(t);
  select.setAttribute('aria-label', `permission of ${t.toolName}`);
  // The list is drawn again on every change; this lets the focus come back to the same control.
  select.dataset.focusKey = `permission\n${key}`;
  if (pending.has(key)) select.setAttribute('aria-busy', 'true');
  select.addEventListener('click', (e) => e.stopPropagation());
  select.addEventListener('change', () => void change(s.name, t, select.value));
  const parts = [select];
  const error = errors.get(key);
  if (error !== undefined) {
    const id = `permission-error-${++errorIds}`;
    select.setAttribute('aria-invalid', 'true');
    select.setAttribute('aria-describedby', id);
    parts.push(el('span', { id, className: 'error-text permission-error', textContent: error }));
  }
  return parts;
}

function toolItem(s, t) {
  const text = el('span', {
    className: 'tool-text',
    textContent: `${t.toolName}${t.description ? ` — ${t.description.split('\n')[0]}` : ''}`,
  });
  const item = el('li', {}, text, ...permissionControl(s, t));
  item.dataset.tool = t.name;
  if (t.permission) item.dataset.permission = t.permission;
  if (t.permissionOverridden === true) item.dataset.overridden = 'true';
  item.addEventListener('click', () => {
    setText($('contract-title'), t.toolName);
    setText(
      $('contract-body'),
      JSON.stringify(
        {
          description: t.description,
          inputSchema: t.inputSchema,
          permission: t.permission,
          overridden: t.permissionOverridden === true,
        },
        null,
        2,
      ),
    );
    /** @type {HTMLDialogElement} */ ($('contract-dialog')).showModal();
  });
  return item;
}

/** The tool list of server `s` (of ListMcpServers). */
export function toolList(s) {
  const tools = el('ul', { className: 'tools' });
  tools.append(...s.tools.map((t) => toolItem(s, t)));
  if (s.tools.length === 0) tools.append(el('li', { textContent: 'no tools', className: 'muted' }));
  return tools;
}
