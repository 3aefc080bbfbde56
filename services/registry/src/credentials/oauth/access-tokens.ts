/** The hash a caller names the token it holds by, and the one renewal margin: defined once, beside the stored tokens. */
export { accessTokenHash } from '@mcpx/contracts';
export { REFRESH_BEFORE_EXPIRY_MS } from '@mcpx/stored';
