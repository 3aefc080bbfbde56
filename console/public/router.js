// The console's rooms: one at a time, chosen by the address's hash, so every view has an address
// a person can keep or send (`#/servers/acme`, `#/agents/<id>`). A room is every `[data-room]`
// section of index.html; the navigation marks the one shown. An OAuth sign-in consent arrives as
// `#sign-in=<id>` and opens the signers room.
import { $ } from './ui.js';

/** Rooms of the navigation, and the pages that belong to one (a server's page to Servers). */
const PARENT = { server: 'servers', agent: 'agents', welcome: 'servers' };
const ROOMS = new Set([
  'welcome',
  'servers',
  'server',
  'agents',
  'agent',
  'approvals',
  'questions',
  'reviews',
  'tasks',
  'activity',
  'audit',
  'endpoint',
  'signers',
]);

/** The room and its parameter (a server's name, an agent's id) the address names. */
export function currentRoute() {
  const hash = location.hash;
  if (hash.startsWith('#sign-in=')) return { room: 'signers', param: '' };
  const [, room = '', ...rest] = hash.replace(/^#/, '').split('/');
  const param = rest.length > 0 ? decodeURIComponent(rest.join('/')) : '';
  if (room === 'servers' && param !== '') return { room: 'server', param };
  if (room === 'agents' && param !== '') return { room: 'agent', param };
  return ROOMS.has(room) ? { room, param } : { room: 'servers', param: '' };
}

let onEnter = (_route) => undefined;
/** Set while no key is in use: every room then shows the first-run screen. */
let signedOut = true;

/** Shows the room the address names (the first-run screen while no key is in use). */
export function show() {
  const route = signedOut ? { room: 'welcome', param: '' } : currentRoute();
  for (const section of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('main > section[data-room]')))
    section.classList.toggle('away', section.dataset.room !== route.room);
  const navRoom = PARENT[route.room] ?? route.room;
  for (const a of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll('#nav a[data-room]'))) {
    if (a.dataset.room === navRoom && !signedOut) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.body.dataset.room = route.room;
  document.body.classList.remove('nav-open');
  $('nav-toggle').setAttribute('aria-expanded', 'false');
  onEnter(route);
}

/** Follows the address: `enter(route)` runs each time a room is shown (to load what it shows). */
export function initRouter(enter) {
  onEnter = enter;
  window.addEventListener('hashchange', show);
  $('nav-toggle').addEventListener('click', () => {
    const open = document.body.classList.toggle('nav-open');
    $('nav-toggle').setAttribute('aria-expanded', String(open));
  });
  show();
}

/** Whether a key is in use (the rooms) or not (the first-run screen). */
export function setSignedIn(on) {
  signedOut = !on;
  show();
}

/** Goes to `hash` (`#/servers/acme`). */
export function go(hash) {
  if (location.hash === hash) show();
  else location.hash = hash;
}
