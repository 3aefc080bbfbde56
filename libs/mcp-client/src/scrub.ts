/**
 * The one rule for secrets in text that came from a remote server (an error body, a status text,
 * a JSON-RPC error message, a tool result, a listing) before it reaches anyone: every form of
 * every secret the connector sent with the request becomes `[redacted]`.
 *
 * From each secret value (a header value such as `Bearer X`, a token, a client secret, a URL's
 * query value or userinfo) the rule derives:
 * - the value itself, and the bare credential after an auth scheme (`Bearer X` → `X`, any scheme);
 * - for a `Basic` credential, the decoded `user:pass` and each of its halves;
 * - base64 (standard and URL alphabets, with or without padding) of each of those, also as it
 *   appears inside a longer base64 text (all three byte alignments);
 * and matches each of them in any letter case, with any character percent-encoded (`%2F`, `%2f`),
 * a space as `+`, or JSON-escaped (`\/`, `\u002f`). A value shorter than {@link MIN_SECRET_CHARS}
 * is not searched (it would redact ordinary words and protects nothing); one shorter than
 * {@link ANYWHERE_CHARS} is matched only as a whole word, not inside longer words.
 */
export const REDACTED = '[redacted]';

/** Values shorter than this are not secrets the rule can look for. */
export const MIN_SECRET_CHARS = 4;
/** Values shorter than this are matched only between non-alphanumeric characters. */
export const ANYWHERE_CHARS = 8;

/** An auth scheme followed by its credential (RFC 9110 `auth-scheme 1*SP token68`, or anything after the scheme). */
const SCHEME_VALUE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+[ \t]+(\S(?:[\s\S]*\S)?)\s*$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The plain forms of one secret value: itself, its bare credential, a Basic credential's parts. */
function plainForms(value: string): string[] {
  const forms = [value, value.trim()];
  const bare = SCHEME_VALUE.exec(value.trim())?.[1];
  if (bare !== undefined) forms.push(bare);
  for (const candidate of [value.trim(), bare]) {
    if (candidate === undefined || !BASE64.test(candidate) || candidate.length % 4 === 1) continue;
    const decoded = Buffer.from(candidate, 'base64').toString('utf8');
    // Only a decoding that reads as text is a credential's plain form (not any base64-looking token).
    if (!/^[\x20-\x7e]+$/.test(decoded)) continue;
    forms.push(decoded);
    const colon = decoded.indexOf(':');
    if (colon >= 0) forms.push(decoded.slice(0, colon), decoded.slice(colon + 1));
  }
  return forms.filter((f) => f.length >= MIN_SECRET_CHARS);
}

/**
 * Base64 of `form` as it appears anywhere inside base64 text: for each of the 3 byte offsets the
 * form may start at, the characters that depend on the form's bytes alone.
 */
function base64Forms(form: string): string[] {
  const bytes = Buffer.from(form, 'utf8');
  // The whole encoding first (with its padding), then the slices that survive any neighbours.
  const whole = bytes.toString('base64');
  const out = [whole, bytes.toString('base64url')];
  for (let offset = 0; offset < 3; offset++) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const encoded = padded.toString('base64');
    const start = Math.ceil((offset * 8) / 6);
    const end = Math.floor(((offset + bytes.length) * 8) / 6);
    const slice = encoded.slice(start, end);
    if (slice.length >= ANYWHERE_CHARS) out.push(slice, slice.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function hex(n: number, width: number): string {
  return n.toString(16).padStart(width, '0');
}

/** One character in any encoding the rule knows: itself, percent-encoded, `+` for a space, JSON-escaped. */
function charPattern(ch: string): string {
  const alts = [escapeRegExp(ch), [...Buffer.from(ch, 'utf8')].map((b) => `%${hex(b, 2)}`).join('')];
  if (ch === ' ') alts.push('\\+');
  if (!/[A-Za-z0-9]/.test(ch)) {
    // JSON's \uXXXX, one per UTF-16 unit (a character outside the BMP is a surrogate pair).
    alts.push(Array.from({ length: ch.length }, (_, i) => `\\\\u${hex(ch.charCodeAt(i), 4)}`).join(''));
    if (ch === '/' || ch === '"' || ch === '\\') alts.push(`\\\\${escapeRegExp(ch)}`);
  }
  return `(?:${alts.join('|')})`;
}

/** The pattern of a plain form, short ones bounded as a whole word. */
function formPattern(form: string): string {
  const body = [...form].map(charPattern).join('');
  return form.length < ANYWHERE_CHARS ? `(?<![A-Za-z0-9])${body}(?![A-Za-z0-9])` : body;
}

/** Keys of a tool result whose values go back to the server as received, or are binary payloads. */
const UNTOUCHED_KEYS = new Set(['requestState', 'blob']);

/**
 * The compiled rule for one set of secret values. Built once per request's secrets (see
 * {@link scrubberOf}); `redact` is linear in the text's length.
 */
export class SecretScrubber {
  readonly #pattern: RegExp | null;

  constructor(values: readonly string[]) {
    const plain = new Set<string>();
    for (const value of values) for (const form of plainForms(value)) plain.add(form);
    const encoded = new Set<string>();
    for (const form of plain) for (const b64 of base64Forms(form)) encoded.add(b64);
    // Longest first: an alternation takes the first that matches, so the whole `Bearer X` wins over `X`.
    const patterns = [
      ...[...plain].map((f) => ({ len: f.length, source: formPattern(f) })),
      ...[...encoded].map((f) => ({ len: f.length, source: escapeRegExp(f) })),
    ]
      .sort((a, b) => b.len - a.len)
      .map((p) => p.source);
    this.#pattern = patterns.length === 0 ? null : new RegExp(patterns.join('|'), 'gi');
  }

  /** Whether there is anything to look for. */
  get active(): boolean {
    return this.#pattern !== null;
  }

  /** `text` with every form of every secret replaced by `[redacted]`. */
  redact(text: string): string {
    return this.#pattern === null ? text : text.replace(this.#pattern, REDACTED);
  }

  /**
   * Redacts every string (and object key) of a JSON value in place and returns it: a tool's result
   * or listing as the server sent it. Left as they are: `requestState` (returned to the server
   * byte for byte), `blob` and the `data` of image or audio content (binary, base64).
   */
  redactJson<T>(value: T): T {
    if (this.#pattern === null) return value;
    const stack: unknown[] = [value];
    while (stack.length > 0) {
      const node = stack.pop();
      if (node === null || typeof node !== 'object') continue;
      if (Array.isArray(node)) {
        for (let i = 0; i < node.length; i++) {
          const item: unknown = node[i];
          if (typeof item === 'string') node[i] = this.redact(item);
          else stack.push(item);
        }
        continue;
      }
      this.#redactObject(node as Record<string, unknown>, stack);
    }
    return typeof value === 'string' ? (this.redact(value) as T) : value;
  }

  #redactObject(node: Record<string, unknown>, stack: unknown[]): void {
    const binary = node.type === 'image' || node.type === 'audio';
    for (const key of Object.keys(node)) {
      const item = node[key];
      if (UNTOUCHED_KEYS.has(key) || (binary && key === 'data')) continue;
      const safeKey = this.redact(key);
      if (safeKey !== key) {
        delete node[key];
        node[safeKey] = item;
      }
      if (typeof item === 'string') node[safeKey] = this.redact(item);
      else stack.push(item);
    }
  }
}

const compiled = new WeakMap<readonly string[], SecretScrubber>();

/** The scrubber of a list of secret values, compiled once per list object. */
export function scrubberOf(secrets: readonly string[] | SecretScrubber): SecretScrubber {
  if (secrets instanceof SecretScrubber) return secrets;
  let scrubber = compiled.get(secrets);
  if (scrubber === undefined) {
    scrubber = new SecretScrubber(secrets);
    compiled.set(secrets, scrubber);
  }
  return scrubber;
}

/** `text` with every form of every secret in `secrets` replaced (see the module's rule). */
export function redactSecrets(text: string, secrets: readonly string[] | SecretScrubber): string {
  return scrubberOf(secrets).redact(text);
}

/**
 * The secret values a request to `url` with `headers` carries: every header value (static ones
 * too: their values are never shown either), and the URL's userinfo and query values (decoded).
 */
export function requestSecrets(url: string | URL, headers: Readonly<Record<string, string>> = {}): string[] {
  const out = Object.values(headers);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return out;
  }
  for (const part of [parsed.username, parsed.password]) if (part !== '') out.push(safeDecode(part));
  for (const [, value] of parsed.searchParams) out.push(value);
  if (parsed.hash.length > 1) out.push(safeDecode(parsed.hash.slice(1)));
  return out;
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * Rewrites the messages (and stacks) along an error's cause chain with the rule, in place: a
 * log line writes an error's causes, and the SDK's errors carry the server's text as it came.
 */
export function redactErrorChain(err: unknown, secrets: readonly string[] | SecretScrubber): void {
  const scrubber = scrubberOf(secrets);
  if (!scrubber.active) return;
  const pending: unknown[] = [err];
  const seen = new Set<unknown>();
  while (pending.length > 0 && seen.size < 32) {
    const current = pending.pop();
    if (!(current instanceof Error) || seen.has(current)) continue;
    seen.add(current);
    rewrite(current, 'message', scrubber);
    rewrite(current, 'stack', scrubber);
    const data = (current as { data?: unknown }).data;
    if (data !== null && typeof data === 'object') {
      try {
        scrubber.redactJson(data);
      } catch {
        // Frozen data keeps its text; the error's message above is what is shown and logged.
      }
    }
    pending.push(current.cause);
    if (current instanceof AggregateError) pending.push(...(current.errors as unknown[]));
  }
}

function rewrite(err: Error, field: 'message' | 'stack', scrubber: SecretScrubber): void {
  const text = err[field];
  if (typeof text !== 'string') return;
  const safe = scrubber.redact(text);
  if (safe === text) return;
  try {
    Object.defineProperty(err, field, { value: safe, writable: true, configurable: true, enumerable: false });
  } catch {
    // A frozen error keeps its text; its message was already scrubbed where it was copied.
  }
}
