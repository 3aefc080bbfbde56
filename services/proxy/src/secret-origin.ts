/**
 * The proxy's reading of a sealed secret header: the registry seals each value together with the
 * origin it was given for (`\0origin=<origin>\0<value>`, see the registry's `secret-origin.ts`;
 * keep the two in step). A value sealed before origins were recorded has no prefix.
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

/** The value of an opened secret if it may be sent to `origin`, else undefined. */
export function valueForOrigin(plaintext: string, origin: string): string | undefined {
  if (!plaintext.startsWith(PREFIX)) return origin === '' ? undefined : plaintext;
  const end = plaintext.indexOf('\0', PREFIX.length);
  if (end < 0 || origin === '' || plaintext.slice(PREFIX.length, end) !== origin) return undefined;
  return plaintext.slice(end + 1);
}
