// The validator's public types and default limits.

/** One reason a value does not match its schema. `path` is a JSON pointer into the value (`''` is the root). */
export interface ValidationIssue {
  path: string;
  message: string;
  keyword: string;
  /**
   * `schema` when the schema, not the value, is at fault: a `$ref` cycle that consumes no input, or
   * more `$ref`s or in-place keywords in a row than are followed. The tool's server sent a schema
   * that cannot be evaluated here, so a caller should not blame the arguments.
   */
  fault?: 'schema';
}
export type ValidationResult = { ok: true } | { ok: false; errors: ValidationIssue[] };
export type ArgumentValidator = (value: unknown) => ValidationResult;

export interface ValidationLimits {
  /** Levels of the value a schema follows; a value that needs more is refused (`depth`). */
  maxDepth: number;
  /**
   * Work units: one per schema node evaluated at a value node (and per enum/const node compared),
   * plus one per 32 object keys or required names scanned and per KiB of string measured; more is
   * refused (`limit`).
   */
  maxNodes: number;
  /** Issues reported at most; validation stops at this many. */
  maxIssues: number;
  /** Canonical JSON bytes of the whole value; more is refused (`size`) before anything else. */
  maxBytes: number;
  /** `$ref`s followed in a row at one value (no input consumed between them); more is refused (`$ref`). */
  maxRefDepth: number;
  /** `$ref`s followed in one validation; more is refused (`limit`). */
  maxRefs: number;
}

export const DEFAULT_VALIDATION_LIMITS: Readonly<ValidationLimits> = {
  maxDepth: 32,
  maxNodes: 10_000,
  maxIssues: 20,
  maxBytes: 1024 * 1024,
  maxRefDepth: 64,
  maxRefs: 10_000,
};
