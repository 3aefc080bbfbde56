import { describe, expect, it } from 'vitest';
import { McpClientErrorCode } from '@mcpx/mcp-client';
import { approvalStep, limitRefusal, limitRefusalKind, retryDecision, type FailedAttempt } from './call-decisions.js';

const first = (code: string | undefined, extra: Partial<FailedAttempt> = {}): FailedAttempt => ({
  code,
  cancelled: false,
  refreshable: false,
  attempt: 1,
  ...extra,
});

describe('retryDecision: once, only when nothing ran', () => {
  it('reconnects once after a lost legacy session', () => {
    expect(retryDecision(first(McpClientErrorCode.SessionExpired))).toEqual({ retry: true, reason: 'session_expired' });
  });

  it('refreshes once after a refused OAuth token, and only when the token can be refreshed', () => {
    expect(retryDecision(first(McpClientErrorCode.Unauthorized, { refreshable: true }))).toEqual({
      retry: true,
      reason: 'unauthorized',
    });
    // A static bearer token or custom headers: a 401 is the caller's auth_required, not retried.
    expect(retryDecision(first(McpClientErrorCode.Unauthorized))).toEqual({ retry: false });
  });

  it('never retries what may have run on the server', () => {
    for (const code of [
      McpClientErrorCode.Timeout,
      McpClientErrorCode.MaybeExecuted,
      McpClientErrorCode.TransportError,
      McpClientErrorCode.ProtocolError,
      McpClientErrorCode.ConnectFailed,
      McpClientErrorCode.EraNegotiationFailed,
      McpClientErrorCode.Cancelled,
    ]) {
      expect(retryDecision(first(code, { refreshable: true })), code).toEqual({ retry: false });
    }
  });

  it('never retries an error that is not the MCP client’s (its cause is unknown)', () => {
    expect(retryDecision(first(undefined, { refreshable: true }))).toEqual({ retry: false });
  });

  it('never retries a cancelled call, even when the answer proves nothing ran', () => {
    expect(retryDecision(first(McpClientErrorCode.SessionExpired, { cancelled: true }))).toEqual({ retry: false });
    expect(retryDecision(first(McpClientErrorCode.Unauthorized, { cancelled: true, refreshable: true }))).toEqual({
      retry: false,
    });
  });

  it('never retries the retry', () => {
    expect(retryDecision(first(McpClientErrorCode.SessionExpired, { attempt: 2 }))).toEqual({ retry: false });
    expect(retryDecision(first(McpClientErrorCode.Unauthorized, { attempt: 2, refreshable: true }))).toEqual({
      retry: false,
    });
  });
});

describe('approvalStep', () => {
  it('asks the gate for an always_ask tool, and refuses when there is no gate (never runs unasked)', () => {
    expect(approvalStep('always_ask', false, true)).toBe('gate');
    expect(approvalStep('always_ask', false, false)).toBe('unavailable');
  });

  it('needs nothing for other levels, or for a call that passed its approval before its server asked', () => {
    expect(approvalStep('act', false, true)).toBe('none');
    expect(approvalStep('read', false, false)).toBe('none');
    expect(approvalStep('always_ask', true, true)).toBe('none');
    expect(approvalStep('always_ask', true, false)).toBe('none');
  });
});

describe('limitRefusal', () => {
  const limits = { maxConcurrency: 4, ratePerSecond: 10 };

  it('names the rate, the server and the wait, as a retryable rate_limited', () => {
    const err = limitRefusal('github', limits, { ok: false, reason: 'rate', retryAfterMs: 100 });
    expect(err.code).toBe('rate_limited');
    expect(err.retryable).toBe(true);
    expect(err.message).toBe('calls to the github MCP server exceed 10 per second; retry in 100 ms');
    expect(err.details).toEqual({ server: 'github', reason: 'rate', retryAfterMs: 100 });
    expect(limitRefusalKind({ ok: false, reason: 'rate', retryAfterMs: 100 })).toBe('call_rate_per_server');
  });

  it('names the concurrency cap', () => {
    const err = limitRefusal('github', limits, { ok: false, reason: 'concurrency', retryAfterMs: 200 });
    expect(err.message).toBe('the github MCP server already has 4 calls in flight for this account; retry in 200 ms');
    expect(err.details).toEqual({ server: 'github', reason: 'concurrency', retryAfterMs: 200 });
    expect(limitRefusalKind({ ok: false, reason: 'concurrency', retryAfterMs: 200 })).toBe(
      'call_concurrency_per_server',
    );
  });
});
