/**
 * Where the bus reports the faults no caller sees: a handler's unexpected error (the caller only
 * gets `internal`), a malformed message from outside, a failed subscription. A service passes its
 * `@mcpx/log` logger.
 */
export interface BusLog {
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A malformed message from outside (absent: `error`). */
  warn?(msg: string, fields?: Record<string, unknown>): void;
}

/** `log`'s warning, or its error when it has no warning level. */
export function warnOf(log: BusLog): (msg: string, fields?: Record<string, unknown>) => void {
  return (msg, fields) => (log.warn ?? log.error).call(log, msg, fields);
}

/** The fallback `BusLog`: one JSON line on stderr, with only the name and message of an error. */
export function stderrLog(connection: string): BusLog {
  return {
    error: (msg, fields = {}) => {
      const { err, ...rest } = fields;
      const e = err instanceof Error ? { name: err.name, message: err.message } : undefined;
      process.stderr.write(
        `${JSON.stringify({ ts: new Date().toISOString(), level: 'error', service: 'bus', connection, msg, ...rest, ...(e ? { err: e } : {}) })}\n`,
      );
    },
  };
}
