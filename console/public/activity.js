// Stub until the activity view lands (another stream's file, replaced on merge).
/** @param {HTMLElement} root @param {{ act: unknown; server?: string; agent?: string }} _ctx */
export async function mountActivity(root, _ctx) {
  root.replaceChildren(Object.assign(document.createElement('p'), { className: 'muted', textContent: 'No calls recorded yet.' }));
}
