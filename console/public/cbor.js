// Canonical DAG-CBOR encoding of JSON-like values, as @ipld/dag-cbor writes it: map keys sorted
// by encoded length then bytewise, integers in their shortest form, other numbers as 64-bit
// floats. The console signs exactly these bytes, as the CLI does.
const enc = new TextEncoder();

function head(major, n, out) {
  if (n < 24) out.push((major << 5) | n);
  else if (n < 0x100) out.push((major << 5) | 24, n);
  else if (n < 0x10000) out.push((major << 5) | 25, n >> 8, n & 0xff);
  else if (n < 0x100000000) out.push((major << 5) | 26, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
  else {
    const hi = Math.floor(n / 0x100000000);
    const lo = n >>> 0;
    out.push(
      (major << 5) | 27,
      (hi >>> 24) & 0xff,
      (hi >> 16) & 0xff,
      (hi >> 8) & 0xff,
      hi & 0xff,
      (lo >>> 24) & 0xff,
      (lo >> 16) & 0xff,
      (lo >> 8) & 0xff,
      lo & 0xff,
    );
  }
}

function compareKeys(a, b) {
  if (a.length !== b.length) return a.length - b.length;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

function write(value, out) {
  if (value === null) out.push(0xf6);
  else if (value === true) out.push(0xf5);
  else if (value === false) out.push(0xf4);
  else if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) {
      if (value >= 0) head(0, value, out);
      else head(1, -1 - value, out);
    } else {
      if (!Number.isFinite(value)) throw new Error('non-finite numbers are not allowed');
      const buf = new DataView(new ArrayBuffer(8));
      buf.setFloat64(0, value);
      out.push(0xfb, ...new Uint8Array(buf.buffer));
    }
  } else if (typeof value === 'string') {
    const bytes = enc.encode(value);
    head(3, bytes.length, out);
    for (const b of bytes) out.push(b);
  } else if (Array.isArray(value)) {
    head(4, value.length, out);
    for (const v of value) write(v, out);
  } else if (typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [enc.encode(k), v]);
    entries.sort((x, y) => compareKeys(x[0], y[0]));
    head(5, entries.length, out);
    for (const [k, v] of entries) {
      head(3, k.length, out);
      for (const b of k) out.push(b);
      write(v, out);
    }
  } else {
    throw new Error(`cannot encode ${typeof value}`);
  }
}

export function encodeCanonical(value) {
  const out = [];
  write(value, out);
  return new Uint8Array(out);
}
