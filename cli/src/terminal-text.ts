import { displayText } from '@mcpx/domain';

// Remote strings (server names, tool names and descriptions, status errors, results' text,
// approvals' arguments) reach the user's terminal in the CLI's human output. A hostile server could
// put terminal escapes in them (retitle the window, clear the screen, move the cursor to forge a
// line, on some terminals write files or query the terminal), or bidi and zero-width characters
// that make a name or an argument read otherwise than it is. Human output goes through
// `terminalText` before it is written; `--json` output is exact JSON, escaped by JSON itself.

/**
 * `text` safe and truthful in a terminal: every control character (C0 but `\n` and `\t`, DEL, C1),
 * bidi control and invisible character shown as its code point (`<U+001B>`, `<U+202E>`: the
 * domain's `displayText`), so an escape sequence is inert and visible. Printable text, newlines
 * and tabs are kept.
 */
export function terminalText(text: string): string {
  return displayText(text);
}

/** `1 tool`, `16 tools`. */
export function toolCount(n: number): string {
  return `${n} ${n === 1 ? 'tool' : 'tools'}`;
}
