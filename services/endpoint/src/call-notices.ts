import type { CallLog, CallProgress, LogLevel } from '@mcpx/contracts';
import type { ServerContext } from '@modelcontextprotocol/server';
import type { ToolCallInput } from './call-input.js';

/**
 * The server's progress relayed to the client under the client's own `progressToken`, on the
 * request's response stream (docs/endpoint.md#progress); nothing when the request carried none.
 * A notice the stream can no longer take is dropped: the call goes on.
 */
export function relayedProgress(
  mcpReq: ServerContext['mcpReq'],
  progressToken: string | number | undefined,
): Pick<ToolCallInput, 'progress'> {
  if (progressToken === undefined) return {};
  return {
    progress: (p: CallProgress) =>
      void mcpReq.notify({ method: 'notifications/progress', params: { progressToken, ...p } }).catch(() => undefined),
  };
}

/**
 * The server's log messages at the client's level, as `notifications/message` on the same stream
 * (docs/endpoint.md#logging); nothing when the client set no level.
 */
export function relayedLog(
  mcpReq: ServerContext['mcpReq'],
  logLevel: LogLevel | undefined,
): Pick<ToolCallInput, 'logLevel' | 'log'> {
  if (logLevel === undefined) return {};
  return {
    logLevel,
    log: (l: CallLog) =>
      void mcpReq.notify({ method: 'notifications/message', params: { ...l } }).catch(() => undefined),
  };
}
