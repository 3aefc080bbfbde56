import { ROOT_CONTEXT, context, propagation } from '@opentelemetry/api';
import type { Context, ContextManager, Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * How a process finds the trace context a span, a request or a log line belongs to:
 * - `async`: the active context follows the code across awaits (AsyncLocalStorage);
 * - `explicit`: the context is passed by hand (`Context` arguments, W3C carriers), and
 *   `context.with` scopes only the synchronous run of its callback.
 *
 * On Node 20, an AsyncLocalStorage entered once turns on promise hooks for the whole process,
 * for good: every promise made after that costs a call into them, in Node's HTTP, NATS and CBOR
 * code as much as ours. The call path of the endpoint and the proxy makes about a hundred
 * promises a call, so they run `explicit` (see docs/operations.md#trace-context); every other
 * process, and every test that starts services in its own process, runs `async`.
 */
export type TraceContextKind = 'async' | 'explicit';

/**
 * The active context is the one set by the innermost `with` still running on the stack, and the
 * root context after it returns (a callback that runs later, after an await, sees the root).
 */
export class SyncContextManager implements ContextManager {
  #active: Context = ROOT_CONTEXT;

  active(): Context {
    return this.#active;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    const prev = this.#active;
    this.#active = ctx;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.#active = prev;
    }
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const fn = target as (...args: unknown[]) => unknown;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the bound function runs `with` of this manager
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(ctx, fn, this, ...args);
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.#active = ROOT_CONTEXT;
    return this;
  }
}

let installed: TraceContextKind | undefined;

/**
 * Installs the process's context manager (and the W3C propagator), replacing the one installed
 * before. A service process's entry point chooses; `setupTelemetry` installs `async` when
 * nothing was chosen.
 */
export function installTraceContext(kind: TraceContextKind): void {
  if (installed === kind) return;
  context.disable();
  context.setGlobalContextManager(
    kind === 'async' ? new AsyncLocalStorageContextManager().enable() : new SyncContextManager(),
  );
  if (installed === undefined) propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  installed = kind;
}

/** Installs `async` when the process's entry point chose nothing. */
export function ensureTraceContext(): void {
  if (installed === undefined) installTraceContext('async');
}

/**
 * A span's trace and span ids as log fields: a log line written after an await, in a process
 * whose context does not follow awaits, names its span by these (the logger adds the active
 * span's ids only).
 */
export function spanIds(span: Span | undefined): { traceId?: string; spanId?: string } {
  if (span === undefined) return {};
  const { traceId, spanId } = span.spanContext();
  return { traceId, spanId };
}
