// Remote strings (server names, tool names and descriptions, status errors, results' text,
// approvals' arguments) reach the user's terminal in the CLI's human output. A hostile server could
// put terminal escapes in them: retitle the window, clear the screen, move the cursor to forge a
// line, or (on some terminals) write files or query the terminal. Human output goes through
// `terminalText` before it is written; `--json` output is exact JSON, escaped by JSON itself.

/**
 * Whole escape sequences first, so that their parameters do not survive as stray text:
 * - string commands (OSC, DCS, SOS, PM, APC) up to their terminator (BEL, ST as `ESC \` or 0x9C),
 *   by ESC or by their 8-bit introducer;
 * - CSI sequences (`ESC [` or 0x9B, parameters, intermediates, a final byte);
 * - any other escape (`ESC`, intermediates, a final byte).
 * An unterminated string command loses only its introducer (`ESC ]` as any other escape): the rest
 * is plain text.
 */
const SEQUENCES =
  // eslint-disable-next-line no-control-regex
  /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)|(?:\u001b\[|\u009b)[0-?]*[ -/]*[@-~]|\u001b[ -/]*[0-~]/g;

/** Every C0 control but tab and newline, DEL, and every C1 control. */
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` safe to write to a terminal: escape sequences removed whole, then every remaining control
 * character (C0 but `\n` and `\t`, DEL, C1) removed. Printable text, newlines and tabs are kept.
 */
export function terminalText(text: string): string {
  return text.replace(SEQUENCES, '').replace(CONTROLS, '');
}

/** `1 tool`, `16 tools`. */
export function toolCount(n: number): string {
  return `${n} ${n === 1 ? 'tool' : 'tools'}`;
}
