import { trace } from '@opentelemetry/api';

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

/** Field names whose values are never written, whatever they hold. */
const REDACTED_KEYS = /^(authorization|cookie|set-cookie|headers|secretHeaders|secret|secrets|token|password|ciphertext|key)$/i;

function redact(value: unknown, depth = 0): unknown {
  if (depth > 6 || value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return { name: value.name, message: value.message, code: (value as { code?: unknown }).code };
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => redact(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = REDACTED_KEYS.test(k) ? '[redacted]' : redact(v, depth + 1);
  return out;
}

/**
 * A JSON-lines logger. Every line carries the active trace and span ids so a log line can be
 * found from its trace. Values under secret-looking keys are replaced by `[redacted]`; callers
 * still must not put secret values in messages.
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
    const record = {
      ts: new Date().toISOString(),
      level,
      service,
      msg,
      ...(redact({ ...base, ...fields }) as Record<string, unknown>),
      ...(span ? { traceId: span.traceId, spanId: span.spanId } : {}),
    };
    sink(JSON.stringify(record));
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => createLogger(service, { ...opts, fields: { ...base, ...fields } }),
  };
}
