// A server's questions asked in the middle of a tool call (2026-07-28 input_required), waiting for a
// person (ListInputRequests), kept live by the event stream's input-requested and input-answered
// events. A form is drawn from its restricted schema (strings with formats, numbers with bounds,
// booleans, single- and multi-select enums); a URL question opens its URL in a new tab for the
// person (never for a model) and is marked done when the person says so. Answers go through
// AnswerInputRequest; the waiting call then goes on.
import { act } from './api.js';
import { $, el, run, say } from './ui.js';

let requests = [];
let expiryTimer = null;
let agentsOf = () => [];

function agentName(id) {
  return agentsOf().find((a) => a.id === id)?.name ?? id;
}

const INPUT_TYPES = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

/** One form field: its control, and a reader of its value (undefined: left empty). */
function field(name, p, required, key) {
  const id = `input-${key}-${name}`;
  const label = el('label', { htmlFor: id, textContent: `${p.title ?? name}${required ? '' : ' (optional)'}` });
  const help = p.description ? el('small', { className: 'muted', textContent: p.description }) : null;
  let control;
  let read;
  if (p.type === 'boolean') {
    control = el('input', { id, type: 'checkbox', checked: p.default === true });
    read = () => control.checked;
  } else if (p.type === 'array') {
    // Untitled (items.enum) or titled (items.anyOf [{const, title}]), as the server wrote it.
    const options = p.items?.enum ?? (p.items?.anyOf ?? []).map((o) => o.const);
    const names = p.items?.enumNames ?? (p.items?.anyOf ?? []).map((o) => o.title);
    const boxes = options.map((v) =>
      el('input', { type: 'checkbox', value: v, checked: Array.isArray(p.default) && p.default.includes(v) }),
    );
    control = el(
      'fieldset',
      { id, className: 'multi' },
      el('legend', { textContent: p.title ?? name }),
      ...boxes.map((b, i) => el('label', { className: 'inline' }, b, ` ${names[i] ?? b.value}`)),
    );
    read = () => boxes.filter((b) => b.checked).map((b) => b.value);
    return { node: el('div', { className: 'input-field' }, control, ...(help ? [help] : [])), name, read };
  } else if (p.type === 'string' && (Array.isArray(p.enum) || Array.isArray(p.oneOf))) {
    // Untitled (enum), legacy titled (enum + enumNames) or titled (oneOf [{const, title}]).
    const values = p.enum ?? p.oneOf.map((o) => o.const);
    const names = p.enumNames ?? (p.oneOf ?? []).map((o) => o.title);
    control = el(
      'select',
      { id },
      ...(required ? [] : [el('option', { value: '', textContent: '—' })]),
      ...values.map((v, i) => el('option', { value: v, textContent: names[i] ?? v })),
    );
    if (typeof p.default === 'string') control.value = p.default;
    read = () => (control.value === '' ? undefined : control.value);
  } else if (p.type === 'number' || p.type === 'integer') {
    control = el('input', { id, type: 'number', step: p.type === 'integer' ? '1' : 'any', required });
    if (typeof p.minimum === 'number') control.min = String(p.minimum);
    if (typeof p.maximum === 'number') control.max = String(p.maximum);
    if (typeof p.default === 'number') control.value = String(p.default);
    read = () => (control.value === '' ? undefined : Number(control.value));
  } else {
    control = el('input', { id, type: INPUT_TYPES[p.format] ?? 'text', required });
    if (typeof p.minLength === 'number') control.minLength = p.minLength;
    if (typeof p.maxLength === 'number') control.maxLength = p.maxLength;
    if (typeof p.default === 'string') control.value = p.default;
    // A date-time field reads local time; the answer carries it in ISO-8601 with its offset.
    read = () =>
      control.value === ''
        ? undefined
        : p.format === 'date-time'
          ? new Date(control.value).toISOString()
          : control.value;
  }
  return { node: el('div', { className: 'input-field' }, label, control, ...(help ? [help] : [])), name, read };
}

async function answer(r, q, body, buttons) {
  for (const b of buttons) b.disabled = true;
  await run(async () => {
    try {
      await act('AnswerInputRequest', { id: r.id, key: q.key, ...body });
      say(
        `${r.tool}: ${body.action === 'accept' ? 'answered, the call goes on' : `${body.action === 'decline' ? 'declined' : 'cancelled'}, the server is told`}`,
      );
    } finally {
      await loadInputs();
    }
  });
}

function refusals(r, q, buttons) {
  const decline = el('button', { type: 'button', textContent: 'Decline' });
  const cancel = el('button', { type: 'button', className: 'quiet', textContent: 'Cancel' });
  decline.addEventListener('click', () => void answer(r, q, { action: 'decline' }, [...buttons, decline, cancel]));
  cancel.addEventListener('click', () => void answer(r, q, { action: 'cancel' }, [...buttons, decline, cancel]));
  return [decline, cancel];
}

function question(r, q) {
  const box = el(
    'div',
    { className: 'input-question' },
    el('p', { className: 'input-message', textContent: q.message }),
  );
  box.dataset.key = q.key;
  if (q.kind === 'url') {
    // Opened for the person, in a tab of their own; the console never fetches it.
    const link = el('a', {
      href: q.url,
      target: '_blank',
      rel: 'noopener noreferrer',
      textContent: `Open ${new URL(q.url).host}`,
    });
    const done = el('button', { type: 'button', className: 'primary', textContent: 'Done' });
    done.title = 'I finished in the browser tab';
    const others = refusals(r, q, [done]);
    done.addEventListener('click', () => void answer(r, q, { action: 'accept' }, [done, ...others]));
    box.append(
      el('p', { className: 'muted', textContent: q.url }),
      el('div', { className: 'row' }, link, done, ...others),
    );
    return box;
  }
  const required = new Set(q.requestedSchema.required ?? []);
  const fields = Object.entries(q.requestedSchema.properties).map(([name, p]) =>
    field(name, p, required.has(name), q.key),
  );
  const submit = el('button', { type: 'submit', className: 'primary', textContent: 'Submit' });
  const others = refusals(r, q, [submit]);
  const form = el(
    'form',
    { className: 'input-form' },
    ...fields.map((f) => f.node),
    el('div', { className: 'row' }, submit, ...others),
  );
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (!form.reportValidity()) return;
    const content = {};
    for (const f of fields) {
      const v = f.read();
      if (v !== undefined) content[f.name] = v;
    }
    void answer(r, q, { action: 'accept', content }, [submit, ...others]);
  });
  box.append(form);
  return box;
}

function inputItem(r) {
  const head = el(
    'div',
    { className: 'approval-row' },
    el('strong', { textContent: r.tool }),
    el('span', {
      className: 'muted',
      textContent: `agent ${agentName(r.agent)} · run ${r.run}${r.round > 1 ? ` · round ${r.round}` : ''}`,
    }),
    el('span', { className: 'muted', textContent: `expires ${new Date(r.expiresAt).toLocaleTimeString()}` }),
  );
  const open = r.requests.filter((q) => q.answerBy === 'person' && !r.answered.includes(q.key));
  const li = el('li', { className: 'approval input-request' }, head, ...open.map((q) => question(r, q)));
  li.dataset.input = r.id;
  return li;
}

function render() {
  const now = Date.now();
  const live = requests.filter((r) => Date.parse(r.expiresAt) > now);
  $('inputs-empty').hidden = live.length > 0;
  $('input-count').textContent = live.length > 0 ? String(live.length) : '';
  $('input-list').replaceChildren(...live.map(inputItem));
  // A question nobody answered drops out of the list when it expires.
  clearTimeout(expiryTimer);
  const next = Math.min(...live.map((r) => Date.parse(r.expiresAt)));
  if (Number.isFinite(next)) expiryTimer = setTimeout(render, Math.max(0, next - now) + 50);
}

/** Reads the waiting input requests again (ListInputRequests is the source of truth; events only wake us). */
export async function loadInputs() {
  requests = (await act('ListInputRequests')).inputRequests;
  render();
}

/** `agents()` names the agents of the account (for showing who asked). */
export function initInputs(agents) {
  agentsOf = agents;
}

/** Event-stream handlers of this view. */
export const inputEvents = {
  'input-requested': (e) => {
    if (e.forPerson !== false) void run(loadInputs);
  },
  'input-answered': (e) => {
    requests = requests.filter((r) => r.id !== e.inputRequestId);
    render();
  },
};
