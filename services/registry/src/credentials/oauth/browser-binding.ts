import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Counter, Meter } from '@mcpx/telemetry';
import { PENDING_AUTHORIZATION_TTL_MS, stateHash } from './oauth-connections.repository.js';
import { OAUTH_COOKIE_PATH, OAUTH_START_PATH } from './paths.js';

/** How long a ticket URL may be opened (once): the owner opens it right after asking for it. */
export const OAUTH_TICKET_TTL_MS = 10 * 60_000;
/**
 * How long the browser that opened a ticket may come back to the callback: the sign-in at the
 * authorization server (password, second factor, consent) happens in between.
 */
export const OAUTH_BINDING_TTL_MS = 15 * 60_000;

/** A ticket and a binding value: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** What a ticket points at: the pending authorization it opens (the authorization server's URL). */
interface TicketValue {
  account: string;
  serverId: string;
  /** The SHA-256 of the pending authorization's `state` (what the callback will present). */
  stateHash: string;
  authorizationUrl: string;
}

export type TakenTicket = ({ ok: true } & TicketValue) | { ok: false; reason: 'malformed' | 'unknown' };

export interface OAuthTicketsOptions {
  /** `<public url>/v1/oauth/start`: where a ticket is opened. */
  startUrl: () => string;
  /** Whether the binding cookie gets `Secure` (the registry's public URL is https). */
  secureCookie: () => boolean;
  meter?: Meter;
  ticketTtlMs?: number;
  bindingTtlMs?: number;
}

function sha256(s: string): string {
  return createHash('sha256').update(s, 'utf8').digest('hex');
}

/**
 * Binds an OAuth authorization to the browser of the person who asked for it. A signed action
 * (an OWNER's or WRITER's) gets a ticket URL, not the authorization server's: a short-lived
 * ticket that opens once. Opening it sets an HttpOnly, SameSite=Lax cookie on the registry's
 * OAuth path and sends that browser on to the authorization server; the registry keeps only the
 * cookie's hash, under the pending authorization's state hash. The callback completes only for a
 * browser presenting that cookie: an authorization URL (or a callback) carried to another browser
 * completes nothing. Kept in Redis beside the nonces: a lost binding only means "start again".
 */
export class OAuthTickets {
  private readonly outcomes: Counter | undefined;
  private readonly ticketTtlMs: number;
  private readonly bindingTtlMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly opts: OAuthTicketsOptions,
  ) {
    this.ticketTtlMs = opts.ticketTtlMs ?? OAUTH_TICKET_TTL_MS;
    this.bindingTtlMs = Math.min(opts.bindingTtlMs ?? OAUTH_BINDING_TTL_MS, PENDING_AUTHORIZATION_TTL_MS);
    this.outcomes = opts.meter?.createCounter('mcpx_oauth_browser_bindings_total', {
      description:
        'OAuth authorizations bound to a browser: tickets issued and opened, callbacks admitted or refused, by step and outcome',
    });
  }

  /** Counts a step of the binding (`ticket`, `start`, `callback`) with its outcome. */
  count(step: 'ticket' | 'start' | 'callback', outcome: string): void {
    this.outcomes?.add(1, { step, outcome });
  }

  /** A single-use ticket URL for the pending authorization that `authorizationUrl` starts. */
  async issue(target: { account: string; serverId: string }, authorizationUrl: string): Promise<string> {
    const state = new URL(authorizationUrl).searchParams.get('state');
    if (state === null) throw new Error('the authorization URL carries no state');
    const ticket = randomBytes(32).toString('base64url');
    const value: TicketValue = {
      account: target.account,
      serverId: target.serverId,
      stateHash: stateHash(state),
      authorizationUrl,
    };
    await this.redis.set(this.ticketKey(ticket), JSON.stringify(value), 'PX', this.ticketTtlMs);
    this.count('ticket', 'issued');
    const url = new URL(this.opts.startUrl());
    url.searchParams.set('ticket', ticket);
    return url.toString();
  }

  /**
   * Takes a ticket: consumed at once (GETDEL: of two browsers racing, one gets it). Unknown covers
   * used, expired and never issued alike.
   */
  async take(ticket: string | null): Promise<TakenTicket> {
    if (ticket === null || !TOKEN.test(ticket)) return { ok: false, reason: 'malformed' };
    const raw = await this.redis.getdel(this.ticketKey(ticket));
    if (raw === null) return { ok: false, reason: 'unknown' };
    return { ok: true, ...(JSON.parse(raw) as TicketValue) };
  }

  /**
   * A new binding value for the authorization whose state hash is `hash` (its hash recorded):
   * the caller sets it as a cookie in the browser that opened the ticket. A set: each browser
   * that opened a ticket of this authorization (an owner on two devices) may complete it.
   */
  async bind(hash: string): Promise<string> {
    const cookie = randomBytes(32).toString('base64url');
    const key = this.bindingKey(hash);
    await this.redis.multi().sadd(key, sha256(cookie)).pexpire(key, this.bindingTtlMs).exec();
    return cookie;
  }

  /** Whether the request's cookies hold a binding of the authorization `state` came back with. */
  async bound(state: string, cookieHeader: string | undefined): Promise<boolean> {
    const value = readCookie(cookieHeader, this.cookieName(stateHash(state)));
    if (value === undefined || !TOKEN.test(value)) return false;
    return (await this.redis.sismember(this.bindingKey(stateHash(state)), sha256(value))) === 1;
  }

  /** Forgets the bindings of an authorization that ended (completed or refused). */
  async release(state: string): Promise<void> {
    await this.redis.del(this.bindingKey(stateHash(state)));
  }

  /**
   * The cookie for the authorization whose state hash is `hash`: one per authorization, so a
   * browser can hold several (two servers authorized side by side).
   */
  cookieName(hash: string): string {
    return `mcpx_oauth_${hash.slice(0, 16)}`;
  }

  /** `Set-Cookie` for a binding: HttpOnly, SameSite=Lax (the callback is a top-level redirect), the OAuth path only. */
  setCookie(hash: string, value: string): string {
    return `${this.cookieName(hash)}=${value}; Path=${this.cookiePath()}; Max-Age=${Math.floor(this.bindingTtlMs / 1000)}; HttpOnly; SameSite=Lax${this.opts.secureCookie() ? '; Secure' : ''}`;
  }

  /** `Set-Cookie` that removes a binding cookie (after the callback). */
  clearCookie(state: string): string {
    return `${this.cookieName(stateHash(state))}=; Path=${this.cookiePath()}; Max-Age=0; HttpOnly; SameSite=Lax${this.opts.secureCookie() ? '; Secure' : ''}`;
  }

  /**
   * The OAuth path as the browser sees it: a public URL with a path (a registry behind a reverse
   * proxy at `https://host/mcpx`) puts the start and the callback under it, and the cookie with them.
   */
  cookiePath(): string {
    const start = new URL(this.opts.startUrl()).pathname;
    return start.endsWith(OAUTH_START_PATH)
      ? `${start.slice(0, -OAUTH_START_PATH.length)}${OAUTH_COOKIE_PATH}`
      : OAUTH_COOKIE_PATH;
  }

  private ticketKey(ticket: string): string {
    return `${this.prefix}oauth-ticket:${sha256(ticket)}`;
  }

  private bindingKey(hash: string): string {
    return `${this.prefix}oauth-binding:${hash}`;
  }
}

/** The value of cookie `name` in a `Cookie` header (the first one), else undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
