// Small DOM helpers shared by the console's views. Text is always set as text, never as HTML, and
// shown through displayText: remote strings (names, descriptions, errors, arguments, questions)
// carry no bidi override or invisible character the reader cannot see.
import { displayText } from './display-text.js';

export const $ = (id) => document.getElementById(id);

/** Properties that a person reads: shown escaped. Others (`value`, `href`, …) are data, kept exact. */
const SHOWN_PROPS = new Set(['textContent', 'title', 'placeholder']);

/** `el('button', {className: 'quiet', textContent: 'Close'}, child…)`; string children are text. */
export function el(tag, props = {}, ...children) {
  const shown = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, SHOWN_PROPS.has(k) && typeof v === 'string' ? displayText(v) : v]));
  const node = Object.assign(document.createElement(tag), shown);
  node.append(...children.map((c) => (typeof c === 'string' ? displayText(c) : c)));
  return node;
}

/** Sets a node's text, shown escaped. */
export function setText(node, text) {
  node.textContent = displayText(text);
}

/** The status line under the page. */
export function say(text, isError = false) {
  setText($('message'), text);
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
