/**
 * The call log's views (docs/activity.md): what `ListCalls` and `GetCallFigures` answer. Metadata
 * only: never an argument or a result.
 */

/** A call's outcome, by what it says about the remote server: nothing ran (`refused`), it ran and failed (`error`), it may have run (`lost`). */
export type CallOutcome = 'ok' | 'refused' | 'error' | 'lost';

/** The `outcome` filter of `ListCalls`: one outcome, or `failed` (every one but `ok`). */
export const CALL_OUTCOME_FILTERS = ['ok', 'failed', 'refused', 'error', 'lost'] as const;
export type CallOutcomeFilter = (typeof CALL_OUTCOME_FILTERS)[number];

/** Pages of `ListCalls`: 50 calls by default, at most 200. */
export const CALL_PAGE = { defaultLimit: 50, maxLimit: 200 } as const;

/** One recorded call. */
export interface CallView {
  id: string;
  /** When the call arrived at the proxy (ISO 8601). */
  at: string;
  agent: { id: string; name?: string };
  run: string;
  callId: string;
  /** Absent when the call was refused before its tool was found. */
  server?: string;
  tool: string;
  /** `ok` or the error code the caller got. */
  code: string;
  outcome: CallOutcome;
  durationMs: number;
  era?: 'modern' | 'legacy';
  approvalId?: string;
  inputRequestId?: string;
  taskId?: string;
}

/** A server's calls over one window. `errorRate` is failed calls (any outcome but `ok`) over calls; the percentiles are of every call's duration. */
export interface CallFigures {
  calls: number;
  failed: number;
  errorRate: number;
  p50Ms: number | null;
  p95Ms: number | null;
}

/** Per server, over the last hour and the last 24 hours. */
export interface ServerCallFigures {
  server: string;
  lastHour: CallFigures;
  lastDay: CallFigures;
}
