import { ErrorCodes, WireError } from '@mcpx/contracts';
import { Permission } from '@mcpx/domain';
import type { Admission, CallLimits } from '@mcpx/shared-state';

/**
 * The decision rules of a call, pure (no I/O, no clock), so each is tested on its own in
 * microseconds (./call-decisions.test.ts) beside the suites that run them against real servers.
 * The call handler asks them and does what they say.
 */

/** What the first failed attempt of an upstream call allows next. */
export type RetryDecision =
  /** Give up: the error goes to the caller as it is. */
  | { retry: false }
  /** The legacy session was lost (the server said so before it ran anything): one fresh handshake, one retry. */
  | { retry: true; reason: 'session_expired' }
  /** The server refused the OAuth token (a 401 runs nothing): refresh it through the registry, one retry. */
  | { retry: true; reason: 'unauthorized' };

export interface FailedAttempt {
  /** The MCP client's error code (`McpClientError.code`); undefined for any other error. */
  code: string | undefined;
  /** The caller cancelled the call. */
  cancelled: boolean;
  /** The server authenticates with OAuth and this proxy can have its token refreshed. */
  refreshable: boolean;
  /** 1 for the first attempt. */
  attempt: number;
}

const NO_RETRY: RetryDecision = { retry: false };

/**
 * Retry once, and only on an answer that proves the call was not executed: a lost session (404,
 * or an SDK v1 server's 400 "No valid session ID") or a refused token that can be refreshed.
 * Anything else may have run on the server (a timeout, a broken stream, a server error) and is
 * never retried; nor is a cancelled call, a second attempt, or a 401 with no token to refresh.
 */
export function retryDecision(failed: FailedAttempt): RetryDecision {
  if (failed.attempt > 1 || failed.cancelled || failed.code === undefined) return NO_RETRY;
  if (failed.code === 'unauthorized') return failed.refreshable ? { retry: true, reason: 'unauthorized' } : NO_RETRY;
  if (failed.code === 'session_expired') return { retry: true, reason: 'session_expired' };
  return NO_RETRY;
}

/** What the approval step of a call does. */
export type ApprovalStep =
  /** No approval needed: the tool is not `always_ask`, or this call passed its approval before its server asked a question. */
  | 'none'
  /** Approvals are not available on this proxy: the call is refused, never run unasked. */
  | 'unavailable'
  /** The approval gate decides (records an approval, or consumes the one the call carries). */
  | 'gate';

export function approvalStep(permission: string, alreadyApproved: boolean, gateAvailable: boolean): ApprovalStep {
  if (permission !== Permission.always_ask || alreadyApproved) return 'none';
  return gateAvailable ? 'gate' : 'unavailable';
}

/**
 * The `rate_limited` error of a call refused by its server's shared limits: which limit, the
 * figure it holds to, and when to retry (a retryable code: nothing ran).
 */
export function limitRefusal(
  server: string,
  limits: CallLimits,
  refusal: Extract<Admission, { ok: false }>,
): WireError {
  const message =
    refusal.reason === 'rate'
      ? `calls to the ${server} MCP server exceed ${limits.ratePerSecond} per second; retry in ${refusal.retryAfterMs} ms`
      : `the ${server} MCP server already has ${limits.maxConcurrency} calls in flight for this account; retry in ${refusal.retryAfterMs} ms`;
  return new WireError(ErrorCodes.rateLimited, message, {
    server,
    reason: refusal.reason,
    retryAfterMs: refusal.retryAfterMs,
  });
}

/** The metric kind of a limit refusal (`mcpx_quota_rejections_total{kind}`). */
export function limitRefusalKind(
  refusal: Extract<Admission, { ok: false }>,
): 'call_rate_per_server' | 'call_concurrency_per_server' {
  return refusal.reason === 'rate' ? 'call_rate_per_server' : 'call_concurrency_per_server';
}
