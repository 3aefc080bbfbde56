/**
 * A stored secret header carries the origin it was given for inside its sealed value, so the
 * binding is as tamper-proof as the value itself: a config whose URL was changed behind the
 * action's back (or a row copied to another server) still does not send it elsewhere.
 *
 * The sealed plaintext is `\0origin=<origin>\0<value>`. Header values never contain NUL (the
 * validator refuses it), so the prefix cannot be confused with a value. A value sealed before
 * origins were recorded has no prefix and is `unbound`.
 *
 * The proxy reads the same format (`services/proxy/src/secret-origin.ts`); keep the two in step.
 */
const PREFIX = '\0origin=';

/** The origin (`scheme://host[:port]`) of a server URL; '' when it is not a URL with one. */
export function urlOrigin(url: string): string {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? '' : origin;
  } catch {
    return '';
  }
}

/** The plaintext to seal: `value` bound to `origin`. */
export function bindToOrigin(value: string, origin: string): string {
  return `${PREFIX}${origin}\0${value}`;
}

/** An opened secret: its value and the origin it was stored for (undefined: stored before origins were recorded). */
export function unbind(plaintext: string): { value: string; origin?: string } {
  if (!plaintext.startsWith(PREFIX)) return { value: plaintext };
  const end = plaintext.indexOf('\0', PREFIX.length);
  // Malformed: bound to an origin no URL has.
  if (end < 0) return { value: '', origin: '\0' };
  return { value: plaintext.slice(end + 1), origin: plaintext.slice(PREFIX.length, end) };
}
