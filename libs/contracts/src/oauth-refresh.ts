import { sha256Hex } from '@mcpx/domain';
import type { Reply } from './payloads.js';

/**
 * Request of `registry.oauth.refresh` (request/reply, queue group `registry`): a proxy holds an
 * oauth server's access token that is about to expire or was just refused (401). A built-in
 * server's token is its vendor connection's: the registry refreshes that one, under a per-vendor
 * lock (`vendor-oauth:<acct>:<vendor>`), with the same compare-and-refresh. Every exchange
 * with the authorization server stays in the registry, under the same per-server Redis lock
 * (`oauth:<acct>:<serverId>`) as its own refreshes, so a rotating refresh token is presented once
 * whoever (proxies, registries) needs a fresh token at the same moment.
 */
export interface OAuthRefreshRequest {
  account: string;
  /** The server's name. */
  server: string;
  /**
   * Hex SHA-256 of the access token the caller holds (never the token itself). The registry
   * refreshes only while it still stores that token: a caller that lost a race gets `authorized`
   * and reads the token the winner stored.
   */
  staleTokenHash?: string;
}

/** {@link OAuthRefreshRequest.staleTokenHash} of an access token: hex SHA-256 of its UTF-8 bytes. */
export function accessTokenHash(token: string): string {
  return sha256Hex(token);
}

/**
 * The reply's value: `authorized` (a current token is stored: read it again), or `auth_required`
 * (refresh failed or there is no token; the server is recorded `auth_required`, its owner
 * authorizes again through a ticket of AuthorizeMcpServer). No authorization URL is ever sent (the
 * decoder would leave it out): a runtime only learns that the owner must authorize.
 */
export type OAuthRefreshAnswer =
  | { state: 'authorized' }
  | {
      state: 'auth_required';
      error?: string;
      /** A built-in's: the vendor whose connection the owner must make again (there is no URL to open). */
      vendor?: string;
    };

/** The reply of `registry.oauth.refresh`: the one envelope of request/reply (`Reply`). */
export type OAuthRefreshReply = Reply<OAuthRefreshAnswer>;
