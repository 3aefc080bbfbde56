// Remote text as a person may see it. The same rule as the domain library's `displayText` (the
// CLI's), copied because the console loads no package; test/console/display-text.test.ts proves
// the two agree on every code point. Shown escaped as <U+XXXX>: C0 controls but tab and newline,
// DEL, C1; the bidi marks, embeddings, overrides and isolates (U+202E reads a name backwards);
// zero-width and other invisible characters (joiners, word joiner, invisible operators, BOM, soft
// hyphen, line and paragraph separators, interlinear annotation marks) and the tag characters.
const DISPLAY_ESCAPED =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]|[\u{E0000}-\u{E007F}]/gu;

/** `text` with every control, bidi and invisible character shown as its code point (`<U+202E>`). */
export function displayText(text) {
  return String(text).replace(
    DISPLAY_ESCAPED,
    (ch) => `<U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}>`,
  );
}
