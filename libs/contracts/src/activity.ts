/**
 * The call log's words (docs/activity.md): its outcomes, its filter and its pages. The views
 * `ListCalls` and `GetCallFigures` answer are in ./action-views.ts.
 */

/** A call's outcome, by what it says about the remote server: nothing ran (`refused`), it ran and failed (`error`), it may have run (`lost`). */
export const CALL_OUTCOMES = ['ok', 'refused', 'error', 'lost'] as const;
export type CallOutcome = (typeof CALL_OUTCOMES)[number];

/** The `outcome` filter of `ListCalls`: one outcome, or `failed` (every one but `ok`). */
export const CALL_OUTCOME_FILTERS = ['ok', 'failed', 'refused', 'error', 'lost'] as const;
export type CallOutcomeFilter = (typeof CALL_OUTCOME_FILTERS)[number];

/** Pages of `ListCalls`: 50 calls by default, at most 200. */
export const CALL_PAGE = { defaultLimit: 50, maxLimit: 200 } as const;
