import { createHash } from 'node:crypto';

/** Refresh an access token this long before it expires. */
export const REFRESH_BEFORE_EXPIRY_MS = 60_000;

/** Hex SHA-256 of an access token: how a caller names the token it holds without sending it. */
export function accessTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
