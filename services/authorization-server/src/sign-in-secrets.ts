import type { SignInRow } from './sign-ins.repository.js';

/** How long a pending sign-in waits for the owner's decision, and then for its browser to come back. */
export const SIGN_IN_PENDING_MS = 10 * 60_000;
/** How long an authorization code may be redeemed (once). */
export const AUTHORIZATION_CODE_MS = 60_000;
/** How long an access token lives; the client refreshes it. */
export const ACCESS_TOKEN_MS = 60 * 60_000;
/** How long a refresh token may be used (once: each use gives a new one). */
export const REFRESH_TOKEN_MS = 30 * 86_400_000;
/** Active agent tokens one agent may hold (the same bound as CreateAgentToken's). */
export const MAX_ACTIVE_TOKENS_PER_AGENT = 20;

/** A refresh token's prefix (an access token is an agent token, `AGENT_TOKEN_PREFIX`). */
export const REFRESH_PREFIX = 'mcpx_rt_';

/** The tokens a redemption or a refresh hands out (said once, to the client). */
export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  expiresInSeconds: number;
  signIn: SignInRow;
}

/** Why a code or refresh token was refused: the token endpoint says `invalid_grant` for each. */
export type GrantRefusal = 'unknown' | 'expired' | 'replayed' | 'mismatch' | 'ended' | 'revoked' | 'quota';

export class GrantRefused extends Error {
  constructor(
    readonly reason: GrantRefusal,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A step's outcome once its transaction has committed: a refusal is returned from inside (so the
 * sign-in it ended stays ended) and thrown here.
 */
export function settled(out: IssuedTokens | GrantRefused): IssuedTokens {
  if (out instanceof GrantRefused) throw out;
  return out;
}

/**
 * A sign-in's name as the owner's token list shows it: the client's (unverified) name and the host
 * of its metadata document, which is what identifies it; the agent-token name alphabet, 64 at most.
 */
export function tokenName(clientName: string, clientId: string): string {
  const clean = (v: string): string =>
    v
      .replace(/[^\p{L}\p{N} ._:@()/+-]/gu, ' ')
      .replace(/\s+/g, ' ')
      .trim();
  const host = clean(URL.canParse(clientId) ? new URL(clientId).host : '').slice(0, 40);
  const room = 64 - 'OAuth:  ()'.length - host.length;
  return `OAuth: ${clean(clientName).slice(0, Math.max(1, room)).trim()} (${host})`;
}
