/**
 * Characters a person must not be shown as they are, in remote strings (servers' and tools' names,
 * descriptions, status errors, results, arguments) that the CLI and the console display:
 * - every C0 control but tab and newline, DEL and every C1 control: in a terminal they start escape
 *   sequences (retitle the window, move the cursor to forge a line, clear the screen), and a
 *   carriage return rewrites the line it is on;
 * - the bidirectional marks, embeddings, overrides and isolates (U+200E, U+200F, U+061C,
 *   U+202A–U+202E, U+2066–U+2069): they reorder what is shown, so a name or an argument reads
 *   otherwise than it is (U+202E turns `exe.txt` around);
 * - zero-width and other invisible characters: zero-width space, joiners, word joiner and the
 *   invisible operators, the deprecated format characters (U+2060–U+206F), the BOM, soft hyphen,
 *   Mongolian vowel separator, interlinear annotation marks, line and paragraph separators, and the
 *   tag characters (invisible ASCII twins that smuggle text).
 *
 * The console keeps a copy of this class (`console/public/display-text.js`: it loads no package);
 * a test proves the two agree on every code point.
 */
const DISPLAY_ESCAPED =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]|[\u{E0000}-\u{E007F}]/gu;

/** `<U+202E>`: how an escaped character is shown (four hex digits at least, upper case). */
export function codePointLabel(ch: string): string {
  return `<U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}>`;
}

/**
 * `text` as it may be shown to a person: every character of {@link DISPLAY_ESCAPED} replaced by
 * its visible label (`<U+202E>`), all else (newlines, tabs, any script, emoji) kept. For display
 * only: data (`--json`, what is sent or signed) stays exact.
 */
export function displayText(text: string): string {
  return text.replace(DISPLAY_ESCAPED, codePointLabel);
}
