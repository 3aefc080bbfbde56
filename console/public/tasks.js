// Stub until the tasks view lands (another stream's file, replaced on merge).
/** @param {HTMLElement} root @param {{ act: unknown }} _ctx */
export async function mountTasks(root, _ctx) {
  root.replaceChildren(Object.assign(document.createElement('p'), { className: 'muted', textContent: 'No tasks.' }));
}
