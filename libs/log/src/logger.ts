import { trace } from '@opentelemetry/api';
import { redact } from './redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** Where log lines go: stderr by default; tests pass their own to capture every line. */
export type LogSink = (line: string) => void;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

/**
 * Names the logger writes itself. A caller's field of the same name is kept as `field_<name>`:
 * the line's own always win, so `level` or `traceId` mean the same on every line.
 */
const LINE_FIELDS = new Set(['ts', 'level', 'service', 'msg', 'traceId', 'spanId']);

/** The caller's fields, redacted, with names the line owns moved to `field_<name>`. */
function callerFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(redact(fields) as Record<string, unknown>))
    out[LINE_FIELDS.has(k) ? `field_${k}` : k] = v;
  return out;
}

/**
 * A JSON-lines logger. Every line carries the active trace and span ids so a log line can be
 * found from its trace. Fields are redacted and bounded first (see `redact`); callers still must
 * not put secret values in messages. Writing a line never throws: fields that cannot be read
 * are written as `fields: "[unwritable]"`.
 */
export function createLogger(
  service: string,
  opts: { level?: LogLevel; sink?: LogSink; fields?: Record<string, unknown> } = {},
): Logger {
  const min = ORDER[opts.level ?? 'info'];
  const sink = opts.sink ?? ((line: string) => process.stderr.write(line + '\n'));
  const base = opts.fields ?? {};
  const write = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (ORDER[level] < min) return;
    const span = trace.getActiveSpan()?.spanContext();
    const head = { ts: new Date().toISOString(), level, service, msg };
    const ids = span ? { traceId: span.traceId, spanId: span.spanId } : {};
    let line: string;
    try {
      line = JSON.stringify({ ...head, ...callerFields({ ...base, ...fields }), ...ids });
    } catch {
      // A getter that throws, say: the line still says what happened.
      line = JSON.stringify({ ...head, fields: '[unwritable]', ...ids });
    }
    sink(line);
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger(service, { ...opts, fields: { ...base, ...fields } }),
  };
}
