import { invalidInput, type WireError } from './errors.js';

/**
 * Bounds of a strictly decoded item. Depth counts nested arrays and maps (the top-level one is
 * 1); items count every data item, keys included, so the decoder's work and allocations are
 * bounded by the bytes and by `maxItems`, whatever the input.
 */
export interface StrictLimits {
  maxBytes: number;
  maxDepth: number;
  maxItems: number;
}

/**
 * Depth 320 leaves room for what legitimately nests deepest: a tool schema (up to the 256 levels
 * `SCHEMA_MAX_DEPTH` keeps: no tool is dropped for its schema's depth below that) inside an event,
 * a reply or a lambda document, a few levels down. Decoding stays iterative here and bounded.
 */
const MAX_DEPTH = 320;

/** NATS payloads: the server's max_payload bounds them first (1 MiB by default, 64 MiB at most). */
export const PAYLOAD_LIMITS: StrictLimits = { maxBytes: 64 * 1024 * 1024, maxDepth: MAX_DEPTH, maxItems: 1_000_000 };

/** HTTP bodies of the action API (1 MiB, the registry's body limit). */
export const BODY_LIMITS: StrictLimits = { maxBytes: 1024 * 1024, maxDepth: MAX_DEPTH, maxItems: 200_000 };

/**
 * Why a strict decode refused the bytes: `details.rule` of the `invalid_input` error, stable for
 * callers and tests; the message says it in words, with the byte offset.
 */
export const StrictRules = {
  empty: 'empty',
  size: 'size',
  truncated: 'truncated',
  trailingBytes: 'trailing_bytes',
  reserved: 'reserved',
  indefiniteLength: 'indefinite_length',
  tag: 'tag',
  simpleValue: 'simple_value',
  float: 'float',
  integerRange: 'integer_range',
  mapKey: 'map_key',
  duplicateKey: 'duplicate_key',
  utf8: 'utf8',
  depth: 'depth',
  items: 'items',
  notCbor: 'not_cbor',
} as const;
export type StrictRule = (typeof StrictRules)[keyof typeof StrictRules];

/** The one tag DAG-CBOR allows: a CID (a byte string whose first byte is the 0x00 multibase prefix). */
const CID_TAG = 42;
const TWO_POW_32 = 0x1_0000_0000;

const keyDecoder = new TextDecoder();

/** A map key as a string for the duplicate check: ASCII keys (nearly all) without a TextDecoder call. */
function keyString(bytes: Uint8Array, start: number, end: number): string {
  if (end - start <= 64) {
    let s = '';
    for (let i = start; i < end; i++) {
      const b = bytes[i]!;
      if (b >= 0x80) return keyDecoder.decode(bytes.subarray(start, end));
      s += String.fromCharCode(b);
    }
    return s;
  }
  return keyDecoder.decode(bytes.subarray(start, end));
}

function refuse(field: string, rule: StrictRule, message: string, offset: number, extra: Record<string, unknown> = {}): WireError {
  return invalidInput(field, `${message} (at byte ${offset})`, { rule, offset, ...extra });
}

/**
 * A bound crossed (depth, items): `details.limit` is the bound, and `details.path` the map keys
 * (at most {@link BOUND_PATH_KEYS}) leading to where it was crossed (`['arguments']`,
 * `['action', 'arguments']`), so a caller can name the field it lies in (`boundInField`).
 */
function overBound(field: string, rule: StrictRule, message: string, offset: number, limit: number, path: string[]): WireError {
  return refuse(field, rule, message, offset, { limit, path });
}

/** How many map keys from the top a bound's `details.path` names at most. */
export const BOUND_PATH_KEYS = 2;

/** The keys of the open maps from the top, while every container from the top is a map. */
function openPath(isMap: readonly boolean[], keyAt: ReadonlyArray<string | undefined>): string[] {
  const path: string[] = [];
  for (let i = 0; i < Math.min(isMap.length, BOUND_PATH_KEYS); i++) {
    const key = keyAt[i];
    if (isMap[i] !== true || key === undefined) break;
    path.push(key);
  }
  return path;
}

/** True when `bytes[start, end)` is well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF). */
function isUtf8(bytes: Uint8Array, start: number, end: number): boolean {
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
    if (b >= 0xc2 && b <= 0xdf) [need, min, cp] = [1, 0x80, b & 0x1f];
    else if (b >= 0xe0 && b <= 0xef) [need, min, cp] = [2, 0x800, b & 0x0f];
    else if (b >= 0xf0 && b <= 0xf4) [need, min, cp] = [3, 0x10000, b & 0x07];
    else return false;
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

/**
 * Checks in one pass over `bytes` (O(n), no recursion, no allocation beyond one frame per open
 * container and the keys of open maps) that they hold exactly one CBOR item within the DAG-CBOR
 * rules and `limits`:
 * - definite lengths only, each one within the bytes that are left (a huge declared length with a
 *   short body is refused before anything is allocated);
 * - no tag but 42 (a CID over a byte string); so no shared values (tags 28/29), whose expansion
 *   is exponential in the bytes, no dates, typed arrays or records;
 * - map keys are text strings, each at most once per map, never `__proto__`; text is valid UTF-8;
 * - of the simple values only false, true and null; floats only 64-bit and finite;
 * - integers within ±(2^53 − 1), so each decodes to a plain number (DAG-CBOR allows 64 bits; a
 *   BigInt would surprise every consumer);
 * - depth at most `maxDepth`, at most `maxItems` items, nothing after the item.
 * Throws an `invalid_input` WireError naming `field`, with `details.rule` and `details.offset` (and,
 * past a bound, `details.limit` and `details.path`).
 * Lengths need not be minimal, nor keys sorted: the producers' encoder (cbor-x) writes neither.
 */
export function scanStrictCbor(bytes: Uint8Array, field: string, limits: StrictLimits): void {
  const n = bytes.byteLength;
  if (n === 0) throw refuse(field, StrictRules.empty, 'empty payload', 0);
  if (n > limits.maxBytes) throw invalidInput(field, `larger than ${limits.maxBytes} bytes`, { rule: StrictRules.size, limit: limits.maxBytes });
  const view = new DataView(bytes.buffer, bytes.byteOffset, n);
  // Items still expected by each open container (a map expects 2 per entry), whether it is a
  // map, and the keys seen in that map so far (made on its second key).
  const remaining: number[] = [];
  const isMap: boolean[] = [];
  const keys: Array<Set<string> | undefined> = [];
  const firstKey: Array<string | undefined> = [];
  let items = 0;
  let pos = 0;
  let done = false;
  // The key being read in each of the first open maps, named when a bound is crossed inside it.
  const keyAt: Array<string | undefined> = [];

  while (!done) {
    if (pos >= n) throw refuse(field, StrictRules.truncated, 'the bytes end inside an item', pos);
    const at = pos;
    const top = remaining.length - 1;
    const atKey = top >= 0 && isMap[top] === true && remaining[top]! % 2 === 0;
    if (++items > limits.maxItems) throw overBound(field, StrictRules.items, `more than ${limits.maxItems} items`, at, limits.maxItems, openPath(isMap, keyAt));
    const head = bytes[pos++]!;
    const major = head >> 5;
    const info = head & 31;
    let arg: number;
    if (info < 24) arg = info;
    else if (info <= 27) {
      const width = 1 << (info - 24);
      if (pos + width > n) throw refuse(field, StrictRules.truncated, 'the bytes end inside a head', at);
      if (width === 1) arg = bytes[pos]!;
      else if (width === 2) arg = view.getUint16(pos);
      else if (width === 4) arg = view.getUint32(pos);
      else arg = major === 7 ? 0 : view.getUint32(pos) * TWO_POW_32 + view.getUint32(pos + 4);
      if (major !== 7) pos += width;
    } else if (info === 31) {
      throw refuse(field, StrictRules.indefiniteLength, major === 7 ? 'a break code outside an indefinite-length item' : 'indefinite-length items are not allowed (DAG-CBOR)', at);
    } else {
      throw refuse(field, StrictRules.reserved, 'reserved additional information', at);
    }
    if (atKey && major !== 3) throw refuse(field, StrictRules.mapKey, 'map keys must be text strings (DAG-CBOR)', at);

    let opened = false;
    switch (major) {
      case 0:
      case 1:
        if (arg > Number.MAX_SAFE_INTEGER) throw refuse(field, StrictRules.integerRange, 'integer beyond ±(2^53 − 1)', at);
        break;
      case 2:
      case 3: {
        if (arg > n - pos) throw refuse(field, StrictRules.truncated, 'declared length runs past the end of the bytes', at);
        if (major === 3) {
          if (!isUtf8(bytes, pos, pos + arg)) throw refuse(field, StrictRules.utf8, 'text is not valid UTF-8', at);
          if (atKey) {
            const key = keyString(bytes, pos, pos + arg);
            // cbor-x renames it (it would set the object's prototype), so the value would not be what was sent (or signed).
            if (key === '__proto__') throw refuse(field, StrictRules.mapKey, 'the map key "__proto__" is refused', at);
            if (top < BOUND_PATH_KEYS) keyAt[top] = key;
            const seen = keys[top];
            const first = firstKey[top];
            if (seen !== undefined) {
              if (seen.has(key)) throw refuse(field, StrictRules.duplicateKey, 'a map key appears twice', at);
              seen.add(key);
            } else if (first === undefined) {
              firstKey[top] = key;
            } else {
              if (first === key) throw refuse(field, StrictRules.duplicateKey, 'a map key appears twice', at);
              keys[top] = new Set([first, key]);
            }
          }
        }
        pos += arg;
        break;
      }
      case 4:
      case 5: {
        const count = major === 5 ? arg * 2 : arg;
        // Every item takes at least one byte: a count beyond the bytes left cannot be honest.
        if (count > n - pos) throw refuse(field, StrictRules.truncated, 'declared length runs past the end of the bytes', at);
        if (count > 0) {
          if (remaining.length + 1 > limits.maxDepth) throw overBound(field, StrictRules.depth, `nested deeper than ${limits.maxDepth} levels`, at, limits.maxDepth, openPath(isMap, keyAt));
          remaining.push(count);
          isMap.push(major === 5);
          if (remaining.length <= BOUND_PATH_KEYS) keyAt[remaining.length - 1] = undefined;
          keys.push(undefined);
          firstKey.push(undefined);
          opened = true;
        } else if (remaining.length + 1 > limits.maxDepth) {
          throw overBound(field, StrictRules.depth, `nested deeper than ${limits.maxDepth} levels`, at, limits.maxDepth, openPath(isMap, keyAt));
        }
        break;
      }
      case 6: {
        if (arg !== CID_TAG || info !== 24) throw refuse(field, StrictRules.tag, `tag ${arg} is not allowed (DAG-CBOR allows only tag 42)`, at);
        // A CID: a byte string led by the identity multibase prefix. Read it here, as one item.
        const inner = pos;
        const b = bytes[inner];
        if (b === undefined || b >> 5 !== 2 || (b & 31) > 27) throw refuse(field, StrictRules.tag, 'tag 42 must wrap a byte string', inner);
        const innerInfo = b & 31;
        let len = innerInfo;
        let p = inner + 1;
        if (innerInfo >= 24) {
          const width = 1 << (innerInfo - 24);
          if (p + width > n) throw refuse(field, StrictRules.truncated, 'the bytes end inside a head', inner);
          len = width === 1 ? bytes[p]! : width === 2 ? view.getUint16(p) : width === 4 ? view.getUint32(p) : view.getUint32(p) * TWO_POW_32 + view.getUint32(p + 4);
          p += width;
        }
        if (len > n - p) throw refuse(field, StrictRules.truncated, 'declared length runs past the end of the bytes', inner);
        if (len === 0 || bytes[p] !== 0) throw refuse(field, StrictRules.tag, 'a CID must start with the 0x00 prefix', inner);
        pos = p + len;
        break;
      }
      default: {
        // Major 7: false, true, null and 64-bit floats only.
        if (info === 20 || info === 21 || info === 22) break;
        if (info === 27) {
          if (!Number.isFinite(view.getFloat64(pos))) throw refuse(field, StrictRules.float, 'NaN and infinities are not allowed (DAG-CBOR)', at);
          pos += 8;
          break;
        }
        if (info === 25 || info === 26) throw refuse(field, StrictRules.float, 'floats must be 64-bit (DAG-CBOR)', at);
        throw refuse(field, StrictRules.simpleValue, info === 23 ? 'undefined is not allowed (DAG-CBOR)' : 'simple values other than false, true and null are not allowed', at);
      }
    }
    if (opened) continue;
    // The item is complete: close every container it completes.
    for (;;) {
      const last = remaining.length - 1;
      if (last < 0) {
        done = true;
        break;
      }
      const left = remaining[last]! - 1;
      if (left > 0) {
        remaining[last] = left;
        break;
      }
      remaining.pop();
      isMap.pop();
      keys.pop();
      firstKey.pop();
    }
  }
  if (pos !== n) throw refuse(field, StrictRules.trailingBytes, 'bytes after the end of the item', pos);
}
