import type { Tracer } from '@opentelemetry/api';
import { isLogLevel, type CallLog, type CallProgress, type LogLevel } from '@mcpx/contracts';
import { LOG_LEVEL_META_KEY, type Server, type ServerContext } from '@modelcontextprotocol/server';
import type { TokenGrant } from './agent-tokens.js';
import { SET_LEVEL_PARAMS } from './face-params.js';
import type { LogLevels } from './log-levels.js';
import type { progressTokenOf } from './tool-calls.js';
import { relayedLog, relayedProgress } from './call-notices.js';

/**
 * What a face's client hears of a call on the way (docs/endpoint.md#logging, #progress-and-cancellation):
 * the level it asked for, its 2025 `logging/setLevel`, and the progress and log messages sent on
 * the call's own response stream.
 */

/**
 * The level of a call's log messages the client asked for: a 2026-07-28 request's own logLevel
 * (its `_meta` envelope, which the SDK lifts out of `_meta`; none there: no logs, as that revision
 * says), else the level the token's 2025 client set.
 */
export async function logLevelOf(
  logLevels: LogLevels,
  grant: TokenGrant,
  envelope: Record<string, unknown> | undefined,
): Promise<LogLevel | undefined> {
  if (envelope !== undefined) {
    const level = envelope[LOG_LEVEL_META_KEY];
    return isLogLevel(level) ? level : undefined;
  }
  return await logLevels.get(grant.id);
}

/** A 2025 client's level for its token's calls (2026-07-28 has no logging/setLevel: each request's `_meta` carries it). */
export function registerSetLevel(
  server: Server,
  grant: TokenGrant,
  tracer: Tracer,
  logLevels: LogLevels,
  counted: (method: string, outcome: string) => void,
): void {
  server.setRequestHandler('logging/setLevel', SET_LEVEL_PARAMS, async (params) => {
    // Checked by SET_LEVEL_PARAMS before the handler runs.
    const { level } = params as { level: LogLevel };
    const span = tracer.startSpan('endpoint.logging/setLevel', {
      attributes: { 'mcpx.account': grant.account, 'mcpx.agent': grant.agent, 'mcpx.log.level': level },
    });
    try {
      await logLevels.set(grant.id, level);
      counted('logging/setLevel', 'ok');
      return {};
    } finally {
      span.end();
    }
  });
}

/**
 * What a call's server says on the way, on the request's own response stream: its progress under
 * the client's progress token, its log messages at the client's level (call-notices.ts).
 */
export function callStreams(
  ctx: ServerContext,
  progressToken: ReturnType<typeof progressTokenOf>,
  logLevel: LogLevel | undefined,
): { progress?: (p: CallProgress) => void; logLevel?: LogLevel; log?: (l: CallLog) => void } {
  return { ...relayedProgress(ctx.mcpReq, progressToken), ...relayedLog(ctx.mcpReq, logLevel) };
}
