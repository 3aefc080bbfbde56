// The validator's public types and default limits.

/** One reason a value does not match its schema. `path` is a JSON pointer into the value (`''` is the root). */
export interface ValidationIssue {
  path: string;
  message: string;
  keyword: string;
}

/**
 * The verdict on a value. A value is refused only for a mismatch the validator is sure of; a part
 * it cannot check within its bounds is let through (`partial` names the first such part and why),
 * since the remote server validates every call anyway.
 *
 * `filled`, present only when a default was filled: a copy of the arguments where each required
 * property left out whose subschema has a `default` holds that default (the value given is never
 * changed). It is what was validated, and what a caller should send.
 */
export type ValidationResult =
  { ok: true; partial?: string; filled?: Record<string, unknown> } | { ok: false; errors: ValidationIssue[] };
export type ArgumentValidator = (value: unknown) => ValidationResult;

export interface ValidationLimits {
  /** Levels of the value a schema follows; deeper parts are left unchecked (`partial`). */
  maxDepth: number;
  /**
   * Work units: one per schema node evaluated at a value node (and per enum/const node compared),
   * plus one per 32 object keys or required names scanned and per KiB of string measured; past it
   * the rest of the value is left unchecked (`partial`).
   */
  maxNodes: number;
  /** Issues reported at most; validation stops at this many. */
  maxIssues: number;
  /** Canonical JSON bytes of the whole value; more is refused (`size`) before anything else. */
  maxBytes: number;
  /** `$ref`s followed in a row at one value (no input consumed between them); past it that part is left unchecked. */
  maxRefDepth: number;
  /** `$ref`s followed in one validation; past it the rest of the value is left unchecked. */
  maxRefs: number;
}

export const DEFAULT_VALIDATION_LIMITS: Readonly<ValidationLimits> = {
  maxDepth: 64,
  maxNodes: 10_000,
  maxIssues: 20,
  maxBytes: 1024 * 1024,
  maxRefDepth: 64,
  maxRefs: 10_000,
};
