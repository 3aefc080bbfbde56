import type { Counter, Meter, Span } from '@opentelemetry/api';
import {
  CALL_LOGGER_MAX_CHARS,
  CALL_LOG_DATA_MAX_BYTES,
  isLogLevel,
  logLevelPasses,
  type CallLog,
  type LogLevel,
  type ProxyCallRequest,
  type Subjects,
} from '@mcpx/contracts';
import { carriesProtoKey, jsonSizeExceeds, nestsDeeper } from '@mcpx/domain';

/**
 * At most this many log messages per call and second reach the bus (docs/endpoint.md#logging),
 * after a burst of {@link LOG_BURST}: a server that floods its logs costs the bus this.
 */
export const LOG_MESSAGES_PER_SECOND = 20;
/** Messages that may go at once before the rate applies (a token bucket of this size). */
export const LOG_BURST = 20;

/** One call's relay: `message` is the upstream request's `onLog`; `close` ends it when the call does. */
export interface CallLogSink {
  readonly message: (params: unknown) => void;
  readonly close: () => void;
}

/**
 * Relays the log messages (`notifications/message`) of calls sent with a `logLevel` to
 * `mcp.calls.log.<acct>.<run>.<callId>`, where the caller listens. Unlike progress, each message
 * says something of its own, so none replaces another: past {@link LOG_MESSAGES_PER_SECOND} a
 * second (after a burst of {@link LOG_BURST}) a message is dropped and counted, and when the call
 * ends one last message of the connector (`logger: "mcpx"`, level `warning`) says how many were
 * dropped, so a flood is named, not silently cut. A message below the call's level (a legacy
 * session's server may send any) is not passed on; one that is not an MCP log message (an unknown
 * level) is dropped as invalid; `data` past {@link CALL_LOG_DATA_MAX_BYTES} of JSON is replaced by
 * a text that says so; `logger` is cut to {@link CALL_LOGGER_MAX_CHARS}. Counted by outcome
 * (`mcpx_proxy_log_messages_total`), and the call's span says how many went and were dropped.
 */
export class LogRelay {
  private readonly messages: Counter;
  private readonly intervalMs: number;

  constructor(
    private readonly publish: (subject: string, value: CallLog) => void,
    private readonly subjects: Subjects,
    meter: Meter,
    perSecond = LOG_MESSAGES_PER_SECOND,
  ) {
    this.messages = meter.createCounter('mcpx_proxy_log_messages_total', {
      description:
        'Log messages of calls, by outcome (relayed, below the level, dropped by the per-call bound, invalid)',
    });
    this.intervalMs = 1000 / perSecond;
  }

  open(req: Pick<ProxyCallRequest, 'account' | 'run' | 'callId'>, level: LogLevel, span: Span): CallLogSink {
    const subject = this.subjects.callLog(req.account, req.run, req.callId);
    const counts = { relayed: 0, below: 0, dropped: 0, invalid: 0 };
    let tokens = LOG_BURST;
    let at = performance.now();
    let closed = false;
    const count = (outcome: keyof typeof counts): void => {
      counts[outcome]++;
      this.messages.add(1, { outcome });
    };
    const send = (value: CallLog): boolean => {
      try {
        this.publish(subject, value);
        return true;
      } catch {
        // A closed connection: the call goes on without its logs.
        return false;
      }
    };
    return {
      message: (params) => {
        if (closed) return;
        const value = logValue(params);
        if (value === undefined) return count('invalid');
        if (!logLevelPasses(value.level, level)) return count('below');
        const now = performance.now();
        tokens = Math.min(LOG_BURST, tokens + (now - at) / this.intervalMs);
        at = now;
        if (tokens < 1) {
          if (counts.dropped === 0)
            span.addEvent('log messages bounded: messages dropped', { 'mcpx.log.per_second': 1000 / this.intervalMs });
          return count('dropped');
        }
        tokens -= 1;
        if (send(value)) count('relayed');
      },
      close: () => {
        if (closed) return;
        closed = true;
        if (counts.dropped > 0) {
          send({
            level: 'warning',
            logger: 'mcpx',
            data: `${counts.dropped} log messages of the server were left out: over ${Math.round(1000 / this.intervalMs)} a second`,
          });
        }
        if (counts.relayed + counts.below + counts.dropped + counts.invalid > 0) {
          span.setAttributes({
            'mcpx.log.relayed': counts.relayed,
            'mcpx.log.below_level': counts.below,
            'mcpx.log.dropped': counts.dropped,
            'mcpx.log.invalid': counts.invalid,
          });
        }
      },
    };
  }
}

/** The message as published: a known level, `logger` cut, `data` whole within its bound; undefined when it is no log message. */
function logValue(params: unknown): CallLog | undefined {
  if (params === null || typeof params !== 'object') return undefined;
  const p = params as { level?: unknown; logger?: unknown; data?: unknown };
  if (!isLogLevel(p.level)) return undefined;
  const value: CallLog = { level: p.level, data: p.data === undefined ? null : p.data };
  if (typeof p.logger === 'string') value.logger = p.logger.slice(0, CALL_LOGGER_MAX_CHARS);
  if (jsonSizeExceeds(value.data, CALL_LOG_DATA_MAX_BYTES)) {
    value.data = `[mcpx: left out: log data over the ${CALL_LOG_DATA_MAX_BYTES}-byte bound]`;
  } else if (nestsDeeper(value.data, LOG_DATA_MAX_DEPTH) || carriesProtoKey(value.data)) {
    // The bus's strict decoding would refuse it: named here rather than lost there.
    value.data = `[mcpx: left out: log data nested deeper than ${LOG_DATA_MAX_DEPTH} levels, or carrying the key "__proto__"]`;
  }
  return value;
}

/** Nesting of a message's `data` passed on (the bus's decoder holds a payload to far fewer levels than 8 KiB can nest). */
const LOG_DATA_MAX_DEPTH = 32;
