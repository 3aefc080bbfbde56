// Calls of always_ask tools waiting for a human (ListApprovals), kept live by the event stream's
// approval-requested and approval-decided events. Approve lets the runtime re-send that one call,
// once; Deny refuses it.
import { act } from './api.js';
import { $, el, run, say } from './ui.js';

let approvals = [];

let expiryTimer = null;

function agentName(id, agents) {
  return agents().find((a) => a.id === id)?.name ?? id;
}

async function decide(approval, type, buttons) {
  for (const b of buttons) b.disabled = true;
  await run(async () => {
    try {
      await act(type, { approvalId: approval.id });
      say(`${approval.tool}: ${type === 'ApproveToolCall' ? 'approved, the call may be re-sent once' : 'denied'}`);
    } finally {
      await loadApprovals();
    }
  });
}

function approvalItem(a, agents) {
  const approve = el('button', { type: 'button', className: 'primary', textContent: 'Approve' });
  const deny = el('button', { type: 'button', textContent: 'Deny' });
  approve.addEventListener('click', () => void decide(a, 'ApproveToolCall', [approve, deny]));
  deny.addEventListener('click', () => void decide(a, 'DenyToolCall', [approve, deny]));
  const head = el(
    'div',
    { className: 'approval-row' },
    el('strong', { textContent: a.tool }),
    el('span', { className: 'muted', textContent: `agent ${agentName(a.agent, agents)} · run ${a.run}` }),
    el('span', { className: 'muted', textContent: `expires ${new Date(a.expiresAt).toLocaleTimeString()}` }),
    el('span', { className: 'actions-always' }, approve, deny),
  );
  const li = el('li', { className: 'approval' }, head);
  li.dataset.approval = a.id;
  if (a.arguments !== undefined) {
    // The whole arguments, never a cut: what is shown is what is approved. The registry answers them
    // canonical, as kept for display (every object's keys sorted); they are shown in that order.
    li.append(el('pre', { className: 'arguments', textContent: JSON.stringify(a.arguments, null, 2) }));
  } else {
    // Arguments too large to show cannot be approved (the registry refuses it too).
    approve.disabled = true;
    approve.title = 'the arguments are too large to show, so they cannot be approved';
    li.append(
      el('p', { className: 'muted', textContent: 'arguments too large to show: this call can only be denied' }),
    );
  }
  return li;
}

let agentsOf = () => [];

function render() {
  const now = Date.now();
  const live = approvals.filter((a) => Date.parse(a.expiresAt) > now);
  $('approvals-empty').hidden = live.length > 0;
  $('approval-count').textContent = live.length > 0 ? String(live.length) : '';
  $('approval-list').replaceChildren(...live.map((a) => approvalItem(a, agentsOf)));
  // An approval nobody decided drops out of the list when it expires.
  clearTimeout(expiryTimer);
  const next = Math.min(...live.map((a) => Date.parse(a.expiresAt)));
  if (Number.isFinite(next)) expiryTimer = setTimeout(render, Math.max(0, next - now) + 50);
}

/** Reads the pending approvals again (ListApprovals is the source of truth; events only wake us). */
export async function loadApprovals() {
  approvals = (await act('ListApprovals')).approvals;
  render();
}

/** `agents()` names the agents of the account (for showing who asked). */
export function initApprovals(agents) {
  agentsOf = agents;
}

/** Event-stream handlers of this view. */
export const approvalEvents = {
  'approval-requested': () => void run(loadApprovals),
  'approval-decided': (e) => {
    approvals = approvals.filter((a) => a.id !== e.approvalId);
    render();
  },
};
