import { isUtf8 as nativeIsUtf8 } from 'node:buffer';

/** From this many bytes a text's UTF-8 check is the native one (a subarray costs more than a short loop). */
const NATIVE_UTF8_FROM = 48;

/**
 * True when `bytes[start, end)` is well-formed UTF-8 (no overlongs, surrogates or values past
 * U+10FFFF): a short text checked here, a long one by the native check, which holds the same rules.
 */
export function isUtf8(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start >= NATIVE_UTF8_FROM) return nativeIsUtf8(bytes.subarray(start, end));
  let i = start;
  while (i < end) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    let cp: number;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
      cp = b & 0x0f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
      cp = b & 0x07;
    } else return false;
    if (i + need >= end) return false;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k]!;
      if ((c & 0xc0) !== 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += need + 1;
  }
  return true;
}
