import { invalidInput, type WireError } from './errors.js';
import { isUtf8 } from './utf8-check.js';

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

function refuse(
  field: string,
  rule: StrictRule,
  message: string,
  offset: number,
  extra: Record<string, unknown> = {},
): WireError {
  return invalidInput(field, `${message} (at byte ${offset})`, { rule, offset, ...extra });
}

/**
 * A bound crossed (depth, items): `details.limit` is the bound, and `details.path` the map keys
 * (at most {@link BOUND_PATH_KEYS}) leading to where it was crossed (`['arguments']`,
 * `['action', 'arguments']`), so a caller can name the field it lies in (`boundInField`).
 */
function overBound(
  field: string,
  rule: StrictRule,
  message: string,
  offset: number,
  limit: number,
  path: string[],
): WireError {
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

/** The bytes of `__proto__`, the one key refused by name. */
const PROTO_KEY = Uint8Array.from('__proto__', (c) => c.charCodeAt(0));

/** Whether `bytes[a, a + len)` and `bytes[b, b + len)` hold the same bytes. */
function sameBytes(bytes: Uint8Array, a: number, b: number, len: number): boolean {
  for (let i = 0; i < len; i++) if (bytes[a + i] !== bytes[b + i]) return false;
  return true;
}

/** Whether the `len` bytes at `at` spell `__proto__`. */
function isProtoKey(bytes: Uint8Array, at: number, len: number): boolean {
  if (len !== PROTO_KEY.length) return false;
  for (let i = 0; i < len; i++) if (bytes[at + i] !== PROTO_KEY[i]) return false;
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
  if (n > limits.maxBytes)
    throw invalidInput(field, `larger than ${limits.maxBytes} bytes`, {
      rule: StrictRules.size,
      limit: limits.maxBytes,
    });
  const open = new OpenContainers(bytes, field, limits);
  const { remaining, isMap } = open;
  let items = 0;
  let pos = 0;
  for (;;) {
    if (pos >= n) throw refuse(field, StrictRules.truncated, 'the bytes end inside an item', pos);
    const at = pos;
    const top = remaining.length - 1;
    const atKey = top >= 0 && isMap[top] === true && remaining[top]! % 2 === 0;
    if (++items > limits.maxItems)
      throw open.overBound(StrictRules.items, `more than ${limits.maxItems} items`, at, limits.maxItems);
    const head = bytes[pos++]!;
    const major = head >> 5;
    const info = head & 31;
    let arg = info;
    if (info >= 24) {
      if (info > 27) throw badHead(field, major, info, at);
      const width = 1 << (info - 24);
      if (pos + width > n) throw refuse(field, StrictRules.truncated, 'the bytes end inside a head', at);
      arg = major === 7 ? 0 : readUint(bytes, pos, width);
      if (major !== 7) pos += width;
    }
    if (atKey && major !== 3) throw refuse(field, StrictRules.mapKey, 'map keys must be text strings (DAG-CBOR)', at);
    if (major <= 1) {
      if (arg > Number.MAX_SAFE_INTEGER)
        throw refuse(field, StrictRules.integerRange, 'integer beyond ±(2^53 − 1)', at);
    } else if (major <= 3) {
      if (arg > n - pos)
        throw refuse(field, StrictRules.truncated, 'declared length runs past the end of the bytes', at);
      if (major === 3) {
        if (!isUtf8(bytes, pos, pos + arg)) throw refuse(field, StrictRules.utf8, 'text is not valid UTF-8', at);
        if (atKey) open.key(pos, arg, at);
      }
      pos += arg;
    } else if (major <= 5) {
      // Every item takes at least one byte: a count beyond the bytes left cannot be honest.
      if ((major === 5 ? arg * 2 : arg) > n - pos)
        throw refuse(field, StrictRules.truncated, 'declared length runs past the end of the bytes', at);
      if (open.push(major === 5, arg, at)) continue;
    } else if (major === 6) {
      pos = cidEnd(bytes, pos, arg, info, field, at);
    } else {
      pos = simpleEnd(bytes, pos, info, field, at);
    }
    if (open.closeCompleted()) break;
  }
  if (pos !== n) throw refuse(field, StrictRules.trailingBytes, 'bytes after the end of the item', pos);
}

/** The head's additional information is 28–31: a break code or indefinite length (refused in DAG-CBOR) or reserved. */
function badHead(field: string, major: number, info: number, at: number): WireError {
  if (info === 31)
    return refuse(
      field,
      StrictRules.indefiniteLength,
      major === 7
        ? 'a break code outside an indefinite-length item'
        : 'indefinite-length items are not allowed (DAG-CBOR)',
      at,
    );
  return refuse(field, StrictRules.reserved, 'reserved additional information', at);
}

/** A big-endian unsigned integer of `width` (1, 2, 4 or 8) bytes at `pos` (8 bytes: as a number, exact to 2^53). */
function readUint(bytes: Uint8Array, pos: number, width: number): number {
  if (width === 1) return bytes[pos]!;
  if (width === 2) return (bytes[pos]! << 8) | bytes[pos + 1]!;
  if (width === 4) return uint32(bytes, pos);
  return uint32(bytes, pos) * TWO_POW_32 + uint32(bytes, pos + 4);
}

/** The big-endian 32-bit unsigned integer at `pos`. */
function uint32(bytes: Uint8Array, pos: number): number {
  return bytes[pos]! * 0x100_0000 + ((bytes[pos + 1]! << 16) | (bytes[pos + 2]! << 8) | bytes[pos + 3]!);
}

/** Where a tag's item ends: only tag 42 over a byte string led by the identity multibase prefix (a CID), read here as one item. */
function cidEnd(bytes: Uint8Array, inner: number, tag: number, info: number, field: string, at: number): number {
  if (tag !== CID_TAG || info !== 24)
    throw refuse(field, StrictRules.tag, `tag ${tag} is not allowed (DAG-CBOR allows only tag 42)`, at);
  const n = bytes.byteLength;
  const b = bytes[inner];
  if (b === undefined || b >> 5 !== 2 || (b & 31) > 27)
    throw refuse(field, StrictRules.tag, 'tag 42 must wrap a byte string', inner);
  const innerInfo = b & 31;
  let len = innerInfo;
  let p = inner + 1;
  if (innerInfo >= 24) {
    const width = 1 << (innerInfo - 24);
    if (p + width > n) throw refuse(field, StrictRules.truncated, 'the bytes end inside a head', inner);
    len = readUint(bytes, p, width);
    p += width;
  }
  if (len > n - p) throw refuse(field, StrictRules.truncated, 'declared length runs past the end of the bytes', inner);
  if (len === 0 || bytes[p] !== 0) throw refuse(field, StrictRules.tag, 'a CID must start with the 0x00 prefix', inner);
  return p + len;
}

/** Where a major-7 item ends: false, true, null and finite 64-bit floats only. */
function simpleEnd(bytes: Uint8Array, pos: number, info: number, field: string, at: number): number {
  if (info === 20 || info === 21 || info === 22) return pos;
  if (info === 27) {
    // All exponent bits set: NaN or an infinity.
    if ((bytes[pos]! & 0x7f) === 0x7f && (bytes[pos + 1]! & 0xf0) === 0xf0)
      throw refuse(field, StrictRules.float, 'NaN and infinities are not allowed (DAG-CBOR)', at);
    return pos + 8;
  }
  if (info === 25 || info === 26) throw refuse(field, StrictRules.float, 'floats must be 64-bit (DAG-CBOR)', at);
  throw refuse(
    field,
    StrictRules.simpleValue,
    info === 23
      ? 'undefined is not allowed (DAG-CBOR)'
      : 'simple values other than false, true and null are not allowed',
    at,
  );
}

/**
 * The containers open in a {@link scanStrictCbor} pass: for each, the items it still expects (a
 * map expects 2 per entry) and whether it is a map; and the keys of the open maps, as offsets into
 * the bytes (compared byte for byte, no string made), on one stack: each map's start on it in
 * `keysFrom`. A map past {@link SET_FROM_KEYS} keys checks its keys in a set of strings instead.
 */
class OpenContainers {
  readonly remaining: number[] = [];
  readonly isMap: boolean[] = [];
  /** Where each open container's keys begin on the key stack (an array's: where the stack stood). */
  private readonly keysFrom: number[] = [];
  /** The key stack: each key's offset and byte length. */
  private readonly keyAt: number[] = [];
  private readonly keyLength: number[] = [];
  /** The sets of the maps that grew past {@link SET_FROM_KEYS} keys, by depth. */
  private sets: Map<number, Set<string>> | undefined;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly field: string,
    private readonly limits: StrictLimits,
  ) {}

  overBound(rule: StrictRule, message: string, at: number, limit: number): WireError {
    return overBound(this.field, rule, message, at, limit, openPath(this.isMap, this.pathKeys()));
  }

  /** The key being read in each of the first {@link BOUND_PATH_KEYS} open maps (its last key), as text. */
  private pathKeys(): Array<string | undefined> {
    const keys: Array<string | undefined> = [];
    for (let depth = 0; depth < Math.min(this.remaining.length, BOUND_PATH_KEYS); depth++) {
      const end = depth + 1 < this.keysFrom.length ? this.keysFrom[depth + 1]! : this.keyAt.length;
      const last = end - 1;
      keys.push(
        this.isMap[depth] === true && last >= this.keysFrom[depth]!
          ? keyString(this.bytes, this.keyAt[last]!, this.keyAt[last]! + this.keyLength[last]!)
          : undefined,
      );
    }
    return keys;
  }

  /** Opens an array or map of `arg` entries (none is opened for an empty one); true when one was opened. */
  push(map: boolean, arg: number, at: number): boolean {
    if (this.remaining.length + 1 > this.limits.maxDepth)
      throw this.overBound(
        StrictRules.depth,
        `nested deeper than ${this.limits.maxDepth} levels`,
        at,
        this.limits.maxDepth,
      );
    if (arg === 0) return false;
    this.remaining.push(map ? arg * 2 : arg);
    this.isMap.push(map);
    this.keysFrom.push(this.keyAt.length);
    return true;
  }

  /** A key of the innermost open map (`length` bytes at `start`): never `__proto__`, at most once per map. */
  key(start: number, length: number, at: number): void {
    const bytes = this.bytes;
    // cbor-x renames it (it would set the object's prototype), so the value would not be what was sent (or signed).
    if (isProtoKey(bytes, start, length))
      throw refuse(this.field, StrictRules.mapKey, 'the map key "__proto__" is refused', at);
    const depth = this.remaining.length - 1;
    const from = this.keysFrom[depth]!;
    const seen = this.keyAt.length - from;
    if (seen < SET_FROM_KEYS) {
      for (let k = from; k < this.keyAt.length; k++) {
        if (this.keyLength[k] === length && sameBytes(bytes, this.keyAt[k]!, start, length))
          throw refuse(this.field, StrictRules.duplicateKey, 'a map key appears twice', at);
      }
    } else {
      const sets = (this.sets ??= new Map());
      let set = sets.get(depth);
      if (set === undefined) {
        set = new Set();
        for (let k = from; k < this.keyAt.length; k++)
          set.add(keyString(bytes, this.keyAt[k]!, this.keyAt[k]! + this.keyLength[k]!));
        sets.set(depth, set);
      }
      const text = keyString(bytes, start, start + length);
      if (set.has(text)) throw refuse(this.field, StrictRules.duplicateKey, 'a map key appears twice', at);
      set.add(text);
    }
    this.keyAt.push(start);
    this.keyLength.push(length);
  }

  /** An item is complete: closes every container it completes. True when that was the top-level item. */
  closeCompleted(): boolean {
    for (;;) {
      const last = this.remaining.length - 1;
      if (last < 0) return true;
      const left = this.remaining[last]! - 1;
      if (left > 0) {
        this.remaining[last] = left;
        return false;
      }
      this.remaining.pop();
      this.isMap.pop();
      const from = this.keysFrom.pop()!;
      this.keyAt.length = from;
      this.keyLength.length = from;
      this.sets?.delete(last);
    }
  }
}

/** A map's keys are compared byte for byte up to this many; past it, in a set. */
const SET_FROM_KEYS = 16;
