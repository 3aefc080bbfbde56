// Small DOM helpers shared by the console's views. Text is always set as text, never as HTML.

export const $ = (id) => document.getElementById(id);

/** `el('button', {className: 'quiet', textContent: 'Close'}, child…)` */
export function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

/** The status line under the page. */
export function say(text, isError = false) {
  $('message').textContent = text;
  $('message').className = isError ? 'chip error' : 'muted';
}

/** Runs an action of the page; its error goes to the status line. */
export async function run(fn) {
  try {
    await fn();
  } catch (err) {
    say(/** @type {Error} */ (err).message, true);
  }
}
