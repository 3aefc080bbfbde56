// OAuth sign-in consent: an MCP client asked to sign in to one of the account's agent endpoints
// (the registry is the authorization server) and the browser was sent here with
// `#sign-in=<id>`. The owner sees who asks (the client's name from its metadata document, which
// nobody verified, and the hosts of its document and of where the browser goes back) and for
// which agent, and approves or denies with a signed action (DecideSignIn). The browser then opens
// the continue URL, which completes only in the browser that started the sign-in.
import { act, savedKey } from './api.js';
import { $, el, run, say } from './ui.js';

const HASH_RE = /^#sign-in=(si_[0-9a-f]{32})$/;

/** The sign-in this page was opened for, if any. */
function requestedId() {
  return HASH_RE.exec(location.hash)?.[1] ?? null;
}

function forget() {
  window.history.replaceState(null, '', `${location.pathname}${location.search}`);
  $('sign-in').hidden = true;
}

async function decide(id, decision) {
  for (const b of $('sign-in').querySelectorAll('button')) b.disabled = true;
  const out = await act('DecideSignIn', { id, decision });
  say(decision === 'approve' ? 'Sign-in approved: back to the client…' : 'Sign-in denied: back to the client…');
  // The registry's continue step, in this same browser (a path on the registry, like /v1/actions).
  location.assign(new URL(out.continueUrl, location.origin).toString());
}

/** Shows the consent for the sign-in named in the URL (called once a key is in use, and when the hash changes). */
export async function renderSignIn() {
  const id = requestedId();
  const box = $('sign-in');
  if (id === null) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  const { signIns } = await act('ListSignInRequests');
  const s = signIns.find((x) => x.id === id);
  const body = $('sign-in-body');
  if (!s) {
    body.replaceChildren(
      el('p', {
        textContent:
          'This sign-in request has expired, was decided already, or is not for this account. Start it again from the client.',
      }),
    );
    $('sign-in-actions').replaceChildren(el('button', { type: 'button', textContent: 'Dismiss', onclick: forget }));
    return;
  }
  body.replaceChildren(
    el(
      'p',
      {},
      el('strong', { className: 'sign-in-client', textContent: s.client.name }),
      el('span', { className: 'chip auth', textContent: 'unverified name' }),
    ),
    el('p', { textContent: `wants to use the tools of agent "${s.agent.name}" through its MCP endpoint.` }),
    el('p', {
      className: 'muted',
      textContent: `Client document: ${s.client.host} · goes back to: ${s.redirectHost} · expires ${s.expiresAt}`,
    }),
    el('p', {
      className: 'muted',
      textContent: 'Approve only if you started this sign-in from that client just now, in this browser.',
    }),
  );
  const approve = el('button', { type: 'button', id: 'sign-in-approve', textContent: 'Approve' });
  const deny = el('button', { type: 'button', id: 'sign-in-deny', className: 'quiet', textContent: 'Deny' });
  approve.addEventListener('click', () => void run(() => decide(s.id, 'approve')));
  deny.addEventListener('click', () => void run(() => decide(s.id, 'deny')));
  $('sign-in-actions').replaceChildren(approve, deny);
}

export function initSignIn() {
  window.addEventListener('hashchange', () => void run(renderSignIn));
  // Until a key is in use the request cannot be read: say what is waiting and what to do.
  if (requestedId() === null) return;
  void savedKey().then(
    (saved) => {
      if (saved) return;
      $('sign-in').hidden = false;
      $('sign-in-body').replaceChildren(
        el('p', {
          textContent:
            'An MCP client asks to sign in to one of your agents. Use the account’s key in this browser (Use a key file…) to see the request and decide: it completes only in the browser that started it.',
        }),
      );
    },
    () => {},
  );
}
