/**
 * The origin codec of sealed secret headers, shared by the registry (which seals) and the proxy
 * (which opens and sends). A stored secret carries the origin it was given for inside its sealed
 * value, so the binding is as tamper-proof as the value itself: a config whose URL was changed
 * behind the action's back (or a row copied to another server) still does not send it elsewhere.
 *
 * The sealed plaintext is `\0origin=<origin>\0<value>`. Header values never contain NUL (the
 * validator refuses it), so the prefix cannot be confused with a value. A value sealed before
 * origins were recorded has no prefix and is unbound.
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

/**
 * An opened secret: its value and the origin it was stored for (`origin` undefined: sealed before
 * origins were recorded). A prefix without its end is bound to `\0`, an origin no URL has.
 */
export function unbind(plaintext: string): { value: string; origin?: string } {
  if (!plaintext.startsWith(PREFIX)) return { value: plaintext };
  const end = plaintext.indexOf('\0', PREFIX.length);
  if (end < 0) return { value: '', origin: '\0' };
  return { value: plaintext.slice(end + 1), origin: plaintext.slice(PREFIX.length, end) };
}

/**
 * The value of an opened secret if it may be sent to `origin` (the origin of the URL it would go
 * to), else undefined: only a value bound to that origin. A value sealed before origins were
 * recorded is sent nowhere: the registry binds such values to their server's origin when it
 * starts and in the key rotation (`bindUnboundSecrets`); one it could not bind is re-entered.
 */
export function valueForOrigin(plaintext: string, origin: string): string | undefined {
  if (origin === '') return undefined;
  const opened = unbind(plaintext);
  return opened.origin !== undefined && opened.origin === origin ? opened.value : undefined;
}
