import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { displayText } from '@mcpx/domain';
// The console's own copy, loaded as the browser loads it.
import { displayText as consoleDisplayText } from '../../console/public/display-text.js';
import { ROOT } from '../support/system.js';

/** Every code point but the surrogates, in blocks of 4,096. */
function* blocks(): Generator<string> {
  for (let start = 0; start <= 0x10ffff; start += 0x1000) {
    let s = '';
    for (let c = start; c < Math.min(start + 0x1000, 0x110000); c++)
      if (c < 0xd800 || c > 0xdfff) s += String.fromCodePoint(c);
    yield s;
  }
}

describe("the console's display rule", () => {
  it("is the domain's (the CLI's) on every code point", () => {
    let escaped = 0;
    for (const block of blocks()) {
      const shown = consoleDisplayText(block);
      expect(shown).toBe(displayText(block));
      escaped += shown.split('<U+').length - 1;
    }
    // C0 but tab and newline (30), DEL and C1 (33), U+00AD, U+061C, U+180E, U+200B–U+200F (5),
    // U+2028–U+202E (7), U+2060–U+206F (16), U+FEFF, U+FFF9–U+FFFB (3), the tags (128).
    expect(escaped).toBe(226);
  });
});

/**
 * A minimal in-memory DOM, just what `ui.js` touches: elements that keep their properties and
 * children, and `getElementById`. The console's own module then runs in Node as in the page.
 */
class FakeElement {
  textContent = '';
  title = '';
  value = '';
  className = '';
  readonly children: unknown[] = [];
  constructor(readonly tagName: string) {}
  append(...nodes: unknown[]): void {
    this.children.push(...nodes);
  }
}

interface Ui {
  el(tag: string, props?: Record<string, unknown>, ...children: unknown[]): FakeElement;
  say(text: string, isError?: boolean): void;
}

describe("the console's DOM helpers show remote text escaped", () => {
  const g = globalThis as { document?: unknown };
  afterEach(() => {
    delete g.document;
  });

  it('el: textContent, title and string children escaped; value kept exact; say escapes the status line', async () => {
    const message = new FakeElement('div');
    g.document = {
      createElement: (tag: string) => new FakeElement(tag),
      getElementById: (id: string) => (id === 'message' ? message : null),
    };
    // A computed specifier: the module's JavaScript as it is, with no type declaration to load it by.
    const ui = (await import(pathToFileURL(join(ROOT, 'console/public/ui.js')).href)) as Ui;

    const name = ui.el('strong', { textContent: 'invoice\u202Efdp.exe' });
    expect(name.textContent).toBe('invoice<U+202E>fdp.exe');
    const option = ui.el('option', { value: 'a\u202Eb', textContent: 'a\u202Eb', title: 'zero\u200Bwidth' });
    expect(option.value).toBe('a\u202Eb');
    expect(option.textContent).toBe('a<U+202E>b');
    expect(option.title).toBe('zero<U+200B>width');
    const child = new FakeElement('span');
    const row = ui.el('li', {}, 'Not offered: x\u2066y\u2069 — \u001b[2J', child);
    expect(row.children).toEqual(['Not offered: x<U+2066>y<U+2069> — <U+001B>[2J', child]);

    ui.say('server: upstream broke \u202Egnp.exe', true);
    expect(message.textContent).toBe('server: upstream broke <U+202E>gnp.exe');
    expect(message.className).toBe('chip error');
  });
});
