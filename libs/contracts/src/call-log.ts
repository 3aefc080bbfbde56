import { invalidInput } from './errors.js';
import { anyStr, anything, oneOf, optional, payloadDecoder, type Rule } from './field-rules.js';

/**
 * A call's log messages (MCP logging, docs/endpoint.md#logging): the caller asks for them with a
 * level (`ProxyCallRequest.logLevel`), the proxy asks the server for them at that level and
 * publishes each `notifications/message` of the call's server, bounded, on
 * `mcp.calls.log.<acct>.<run>.<callId>` as a {@link CallLog}, where the caller listens while the
 * call runs.
 */

/** MCP's log levels (RFC 5424's), least severe first. */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** JSON bytes of a message's `data` passed on; a larger one is replaced by a text that says so. */
export const CALL_LOG_DATA_MAX_BYTES = 8 * 1024;
/** The longest `logger` name passed on (longer ones are cut). */
export const CALL_LOGGER_MAX_CHARS = 128;

/** Payload of `mcp.calls.log.<acct>.<run>.<callId>`: one log message of the call's server. */
export interface CallLog {
  level: LogLevel;
  logger?: string;
  /** The server's data, whole within {@link CALL_LOG_DATA_MAX_BYTES} of JSON. */
  data: unknown;
}

export function isLogLevel(v: unknown): v is LogLevel {
  return typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);
}

/** Whether a message at `level` passes a threshold of `min` (at `min` or more severe). */
export function logLevelPasses(level: LogLevel, min: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(min);
}

/** A log level (the request's `logLevel`). */
export const logLevel: Rule<LogLevel> = oneOf(...LOG_LEVELS);

const loggerName: Rule<string> = (v, field) => {
  const name = anyStr(v, field);
  if (name.length > CALL_LOGGER_MAX_CHARS)
    throw invalidInput(field, `must be at most ${CALL_LOGGER_MAX_CHARS} characters`);
  return name;
};

/** `mcp.calls.log.<acct>.<run>.<callId>` (the bus's strict decoding bounds `data`). */
export const decodeCallLog: (bytes: Uint8Array) => CallLog = payloadDecoder('log', {
  level: logLevel,
  logger: optional(loggerName),
  data: anything,
});

/**
 * Payload of `mcp.endpoint.clients.log-level`: the log level a 2025 client of a token set
 * (`logging/setLevel` on the endpoint), announced by the instance it reached to the others.
 */
export interface ClientLogLevel {
  instance: string;
  token: string;
  level: LogLevel;
}

/** `mcp.endpoint.clients.log-level`. */
export const decodeClientLogLevel: (bytes: Uint8Array) => ClientLogLevel = payloadDecoder('logLevel', {
  instance: anyStr,
  token: anyStr,
  level: logLevel,
});
