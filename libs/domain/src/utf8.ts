// String measuring and cutting by UTF-8 bytes and code points, without allocating an encoded copy.

/** Number of bytes `s` takes in UTF-8 (a lone surrogate counts as U+FFFD, 3 bytes, as TextEncoder does). */
export function utf8ByteLength(s: string): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * The longest prefix of `s` that fits in `maxBytes` of UTF-8, cut on a code point boundary (a
 * surrogate pair is never split).
 */
export function truncateUtf8(s: string, maxBytes: number): string {
  // Every UTF-16 unit is at most 3 bytes, so short strings need no scan.
  if (s.length * 3 <= maxBytes) return s;
  let bytes = 0;
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    let size: number;
    let units = 1;
    if (c < 0x80) size = 1;
    else if (c < 0x800) size = 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1))) {
      size = 4;
      units = 2;
    } else size = 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    i += units;
  }
  return s.slice(0, i);
}

/** Number of Unicode code points (what JSON Schema's minLength/maxLength count). */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && isLowSurrogate(s.charCodeAt(i + 1))) {
      n--;
      i++;
    }
  }
  return n;
}

/** The first `max` code points of `s`. */
export function truncateCodePoints(s: string, max: number): string {
  if (s.length <= max) return s;
  let i = 0;
  let count = 0;
  while (i < s.length && count < max) {
    const c = s.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && isLowSurrogate(s.charCodeAt(i + 1)) ? 2 : 1;
    count++;
  }
  return s.slice(0, i);
}

/** `text` cut to `maxBytes` of UTF-8 on a character boundary, ending in `…` when cut. */
export function boundText(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || utf8ByteLength(text) <= maxBytes) return text;
  return `${truncateUtf8(text, maxBytes - 3)}…`;
}

function isLowSurrogate(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}
