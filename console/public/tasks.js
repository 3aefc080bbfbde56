// The tasks room: brokered tasks are not readable from the console yet (they are read over NATS,
// docs/tasks.md); the room says so rather than showing an empty list.
/** @param {HTMLElement} root @param {{ act: unknown }} _ctx */
export async function mountTasks(root, _ctx) {
  root.replaceChildren(
    Object.assign(document.createElement('p'), {
      className: 'muted',
      textContent: 'Tasks are not shown in the console yet: a runtime reads, waits for and cancels them with the proxy client (see docs/tasks.md).',
    }),
  );
}
