import { ROOT_CONTEXT, context, createContextKey, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { afterAll, describe, expect, it } from 'vitest';
import { setupTelemetry } from './setup.js';
import { SyncContextManager, installTraceContext, spanIds } from './trace-context.js';
import { traceCarrier } from './trace-carrier.js';
import { withSpan } from './with-span.js';

const KEY = createContextKey('test');

describe('SyncContextManager', () => {
  const manager = new SyncContextManager();
  const marked = ROOT_CONTEXT.setValue(KEY, 'marked');

  it('makes a context active for the synchronous run of its callback only', async () => {
    let inside: unknown;
    let afterAwait: unknown;
    await manager.with(marked, async () => {
      inside = manager.active().getValue(KEY);
      await Promise.resolve();
      afterAwait = manager.active().getValue(KEY);
    });
    expect(inside).toBe('marked');
    expect(afterAwait).toBeUndefined();
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  it('restores the outer context after a nested one, even when the callback throws', () => {
    const inner = marked.setValue(KEY, 'inner');
    manager.with(marked, () => {
      expect(() =>
        manager.with(inner, () => {
          expect(manager.active().getValue(KEY)).toBe('inner');
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(manager.active().getValue(KEY)).toBe('marked');
    });
    expect(manager.active()).toBe(ROOT_CONTEXT);
  });

  it('binds a function to a context, passing this and the arguments', () => {
    const bound = manager.bind(marked, function (this: { n: number }, add: number) {
      return [this.n + add, manager.active().getValue(KEY)];
    });
    expect(bound.call({ n: 1 }, 2)).toEqual([3, 'marked']);
    expect(manager.bind(marked, 'not a function')).toBe('not a function');
  });
});

describe('installTraceContext', () => {
  afterAll(() => installTraceContext('async'));

  it('explicit: a span started after an await has no parent unless it is given one', async () => {
    installTraceContext('explicit');
    const exporter = new InMemorySpanExporter();
    const telemetry = await setupTelemetry({ serviceName: 'trace-context-test', spanExporter: exporter });
    try {
      await withSpan(telemetry.tracer, 'outer', {}, async (outer) => {
        // Synchronously inside: the outer span is active, as with any context manager.
        expect(trace.getActiveSpan()).toBe(outer);
        expect(traceCarrier().traceparent).toContain(outer.spanContext().spanId);
        await Promise.resolve();
        expect(trace.getActiveSpan()).toBeUndefined();
        telemetry.tracer.startSpan('orphan').end();
        const ctx = trace.setSpan(ROOT_CONTEXT, outer);
        telemetry.tracer.startSpan('child', {}, ctx).end();
        expect(traceCarrier(ctx).traceparent).toBe(
          `00-${outer.spanContext().traceId}-${outer.spanContext().spanId}-01`,
        );
        expect(spanIds(outer)).toEqual({ traceId: outer.spanContext().traceId, spanId: outer.spanContext().spanId });
      });
      const spans = exporter.getFinishedSpans();
      const outer = spans.find((s) => s.name === 'outer')!;
      expect(spans.find((s) => s.name === 'child')?.parentSpanContext?.spanId).toBe(outer.spanContext().spanId);
      expect(spans.find((s) => s.name === 'orphan')?.parentSpanContext).toBeUndefined();
    } finally {
      await telemetry.shutdown();
    }
  });

  it('async (the default): the context follows awaits', async () => {
    installTraceContext('async');
    const inside = await context.with(ROOT_CONTEXT.setValue(KEY, 'kept'), async () => {
      await new Promise((r) => setTimeout(r, 1));
      return context.active().getValue(KEY);
    });
    expect(inside).toBe('kept');
    expect(spanIds(undefined)).toEqual({});
  });
});
