// OAuth for a server happens in a popup: the authorization server's page, then the registry's
// callback, which closes the popup once the server is connected. The console learns the outcome
// from its event stream (the discovery after the callback announces `mcp-servers-changed`) and,
// should that stream be down, from the popup closing.
import { $, el } from './ui.js';

const CLOSED_POLL_MS = 500;

/**
 * Opens an empty popup now, inside the click that asked for it: one opened after an action's
 * round trip may be blocked. Its opener is cut before it goes anywhere, so the authorization
 * server's page gets no handle on the console. Returns null when the browser refused.
 */
export function openAuthorizationWindow() {
  const popup = window.open('', '_blank', 'popup,width=520,height=720');
  if (popup) popup.opener = null;
  return popup;
}

/**
 * Sends the popup opened for `server` to `url`, and calls `onClosed` once it is closed (by the
 * callback when done, or by the owner: abandoning costs nothing, Authorize starts again). Without
 * a popup the status line offers the link instead.
 */
export function authorizeIn(popup, server, url, onClosed) {
  if (!popup || popup.closed) {
    const link = el('a', {
      href: url,
      target: '_blank',
      rel: 'noopener noreferrer',
      textContent: `authorize ${server}`,
    });
    $('message').replaceChildren(`${server} needs authorization: `, link);
    $('message').className = 'muted';
    return;
  }
  popup.location.href = url;
  const timer = setInterval(() => {
    if (!popup.closed) return;
    clearInterval(timer);
    onClosed();
  }, CLOSED_POLL_MS);
}

/** Closes a popup opened for an authorization that turned out not to be needed. */
export function discard(popup) {
  if (popup && !popup.closed) popup.close();
}
