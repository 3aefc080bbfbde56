/**
 * What cbor-x writes that DAG-CBOR (and so the strict decoder) refuses, made right after encoding:
 * - a property whose value is `undefined` (simple value 23): our payloads use `undefined` the way
 *   JSON does, for "absent" (`{ok: true, value: undefined}`, optional fields spread in), so such a
 *   map entry is dropped and an `undefined` array element becomes null — what `JSON.stringify` does;
 * - a lone surrogate in a short string (cbor-x writes its 3 bytes as they are, which is not UTF-8;
 *   a remote server's JSON can hold one): it becomes U+FFFD, as cbor-x already writes it in long
 *   strings and as `TextEncoder` does — same length, patched in place.
 * One pass over the bytes, run only when a byte 0xf7 or 0xed occurs at all.
 */

const UNDEFINED = 0xf7;
const NULL = 0xf6;
const BREAK = 0xff;
/** The first byte of the 3-byte UTF-8 form of U+D000–U+DFFF (second byte A0–BF: a surrogate). */
const SURROGATE_LEAD = 0xed;

interface Head {
  major: number;
  info: number;
  /** The argument (a length, count or value); -1 for an indefinite length. */
  arg: number;
  /** Where the item's content starts (after the head). */
  next: number;
}

function readHead(b: Uint8Array, pos: number): Head {
  const first = b[pos]!;
  const major = first >> 5;
  const info = first & 31;
  if (info < 24) return { major, info, arg: info, next: pos + 1 };
  if (info === 31) return { major, info, arg: -1, next: pos + 1 };
  const width = 1 << (info - 24);
  let arg = 0;
  for (let k = 1; k <= width; k++) arg = arg * 256 + b[pos + k]!;
  return { major, info, arg, next: pos + 1 + width };
}

/** Writes `count` into a map or array head that was copied at `at`, keeping its width. */
function patchCount(out: Uint8Array, at: number, info: number, count: number): void {
  if (info < 24) {
    out[at] = (out[at]! & 0xe0) | count;
    return;
  }
  const width = 1 << (info - 24);
  let v = count;
  for (let k = width; k >= 1; k--) {
    out[at + k] = v % 256;
    v = Math.floor(v / 256);
  }
}

class Rewriter {
  private w = 0;
  constructor(
    private readonly b: Uint8Array,
    readonly out: Uint8Array,
  ) {}

  get written(): number {
    return this.w;
  }

  private copy(from: number, to: number): void {
    this.out.set(this.b.subarray(from, to), this.w);
    this.w += to - from;
  }

  /** Copies the item at `pos`, rewriting inside it; returns where the next item starts. */
  item(pos: number): number {
    const h = readHead(this.b, pos);
    switch (h.major) {
      case 2:
      case 3:
        if (h.arg >= 0) {
          const start = this.w + (h.next - pos);
          this.copy(pos, h.next + h.arg);
          if (h.major === 3) this.replaceSurrogates(start, this.w);
          return h.next + h.arg;
        }
        return this.untilBreak(pos, h.next, (p) => this.item(p));
      case 4:
        return this.container(pos, h, 1);
      case 5:
        return this.container(pos, h, 2);
      case 6:
        this.copy(pos, h.next);
        return this.item(h.next);
      default:
        // Integers, simple values and floats: the head's extent covers their bytes.
        this.copy(pos, h.next);
        return h.next;
    }
  }

  /** Replaces each surrogate (ED A0–BF xx) in `out[start, end)` with U+FFFD (EF BF BD). */
  private replaceSurrogates(start: number, end: number): void {
    const o = this.out;
    for (let i = start; i + 2 < end; i++) {
      if (o[i] === SURROGATE_LEAD && o[i + 1]! >= 0xa0 && o[i + 1]! <= 0xbf) {
        o[i] = 0xef;
        o[i + 1] = 0xbf;
        o[i + 2] = 0xbd;
        i += 2;
      }
    }
  }

  private untilBreak(headAt: number, from: number, each: (p: number) => number): number {
    this.copy(headAt, from);
    let p = from;
    while (this.b[p] !== BREAK) p = each(p);
    this.copy(p, p + 1);
    return p + 1;
  }

  private container(headAt: number, h: Head, per: 1 | 2): number {
    const headOut = this.w;
    this.copy(headAt, h.next);
    let p = h.next;
    let kept = 0;
    const one = (): void => {
      if (per === 1) {
        if (this.b[p] === UNDEFINED) {
          this.out[this.w++] = NULL;
          p++;
        } else p = this.item(p);
        kept++;
        return;
      }
      const keyStart = p;
      const valueAt = this.skip(keyStart);
      if (this.b[valueAt] === UNDEFINED) {
        p = valueAt + 1;
        return;
      }
      p = this.item(keyStart);
      p = this.item(p);
      kept++;
    };
    if (h.arg < 0) {
      while (this.b[p] !== BREAK) one();
      this.out[this.w++] = BREAK;
      return p + 1;
    }
    for (let i = 0; i < h.arg; i++) one();
    if (per === 2 && kept !== h.arg) patchCount(this.out, headOut, h.info, kept);
    return p;
  }

  /** Where the item at `pos` ends, without copying it. */
  private skip(pos: number): number {
    const h = readHead(this.b, pos);
    switch (h.major) {
      case 2:
      case 3:
        if (h.arg >= 0) return h.next + h.arg;
        return this.skipUntilBreak(h.next);
      case 4:
      case 5: {
        if (h.arg < 0) return this.skipUntilBreak(h.next);
        let p = h.next;
        const count = h.major === 5 ? h.arg * 2 : h.arg;
        for (let i = 0; i < count; i++) p = this.skip(p);
        return p;
      }
      case 6:
        return this.skip(h.next);
      default:
        return h.next;
    }
  }

  private skipUntilBreak(from: number): number {
    let p = from;
    while (this.b[p] !== BREAK) p = this.skip(p);
    return p + 1;
  }
}

/**
 * Drops `undefined` map values, turns `undefined` array elements into null and lone surrogates
 * into U+FFFD (see above); returns `bytes` itself when there is nothing to do.
 */
export function toDagCborCompatible(bytes: Uint8Array): Uint8Array {
  if (bytes.indexOf(UNDEFINED) === -1 && bytes.indexOf(SURROGATE_LEAD) === -1) return bytes;
  const r = new Rewriter(bytes, new Uint8Array(bytes.byteLength));
  r.item(0);
  return r.out.subarray(0, r.written);
}
