import { ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { ProxyClient } from '@mcpx/proxy-client';
import { TaskClient } from '@mcpx/proxy-client';
import type { Telemetry, TraceContextKind } from '@mcpx/telemetry';
import { startTasksUpstream, type SeenTrace, type TasksUpstream } from '../servers/tasks-upstream.js';
import type { ApiClient } from '../support/api-client.js';
import { createAgentListing } from '../support/fixtures/agents.js';
import { eventually } from '../support/system.js';
import { startTracedSystem, type TracedSystem } from '../support/traced-system.js';

/**
 * What a brokered task sends its server after the call that created it carries the trace context
 * of the span it goes out under, in its `traceparent` header and (a modern request) its `_meta`:
 * a poll's `tasks/get` its `proxy.task.poll` span's, a caller's cancel's `tasks/cancel` its
 * `proxy.tasks/cancel` span's. With the proxy's own trace context (`explicit`: it does not follow
 * awaits, so only the context passed by hand reaches the requests) and the one of a process shared
 * with others.
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  "a brokered task's requests carry their span's trace context (%s trace context)",
  (kind) => {
    const exporter = new InMemorySpanExporter();
    let traced: TracedSystem;
    let telemetry: Telemetry;
    let proxy: ProxyClient;
    let tasks: TaskClient;
    let upstream: TasksUpstream;
    /** Its tasks outlive their ttl of 1.5 s. */
    let short: TasksUpstream;
    let api: ApiClient;
    let agent: string;

    beforeAll(async () => {
      [traced, upstream, short] = await Promise.all([
        startTracedSystem(kind, 'mcpx-task-trace-test', exporter, { TASK_LEASE_MS: '1500', TASK_POLL_MIN_MS: '100' }),
        startTasksUpstream({ durationMs: 1_500, pollIntervalMs: 200 }),
        startTasksUpstream({ pollIntervalMs: 200, ttlMs: 1_500 }),
      ]);
      ({ telemetry, proxy, api } = traced);
      tasks = new TaskClient(traced.nc, traced.subjects);
      await api.act('SetMcpServer', { name: 'tk', config: { url: upstream.url } });
      await api.act('SetMcpServer', { name: 'tks', config: { url: short.url } });
      agent = await createAgentListing(api, 'task-trace', ['tk', 'tks'], ['tk__long-export', 'tks__never-ends']);
    }, 120_000);

    afterAll(async () => {
      await traced?.stop();
      await upstream?.close();
      await short?.close();
    });

    const traceparent = (span: ReadableSpan): string =>
      `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`;
    const sent = (method: string): SeenTrace[] => upstream.stats.traces.filter((t) => t.method === method);

    /** A task of `tool`, answered with its handle (the call's bound passes first). */
    const startTask = async (run: string, format: string, tool = 'tk__long-export'): Promise<string> => {
      const out = await proxy.call({
        account: api.principal,
        agent,
        run,
        tool,
        arguments: tool === 'tk__long-export' ? { format } : {},
        task: true,
        timeoutMs: 300,
      });
      const id = out.result.task?.id;
      expect(id).toMatch(/^tsk_/);
      return id!;
    };

    it("each poll's tasks/get carries its proxy.task.poll span's context, in its header and its _meta", async () => {
      const id = await startTask(`poll-${kind}`, 'csv');
      const polls = await eventually(
        async () => {
          const done = exporter
            .getFinishedSpans()
            .filter((s) => s.name === 'proxy.task.poll' && s.attributes['mcpx.task'] === id);
          return done.length >= 2 ? done : undefined;
        },
        15_000,
        'two polls of the task',
      );
      const gets = sent('tasks/get');
      for (const poll of polls) {
        const tp = traceparent(poll);
        expect(gets.filter((g) => g.header === tp && g.meta === tp)).toHaveLength(1);
      }
    });

    it("a cancel's tasks/cancel carries its proxy.tasks/cancel span's context", async () => {
      const id = await startTask(`cancel-${kind}`, 'pdf');
      const root = telemetry.tracer.startSpan('agent.turn');
      const view = await tasks.withTrace(trace.setSpan(ROOT_CONTEXT, root)).cancelTask(api.principal, id);
      root.end();
      expect(view.state).toBe('cancelled');
      const traceId = root.spanContext().traceId;
      const cancel = await eventually(
        async () =>
          exporter
            .getFinishedSpans()
            .find((s) => s.name === 'proxy.tasks/cancel' && s.spanContext().traceId === traceId),
        10_000,
        'the proxy.tasks/cancel span',
      );
      const tp = traceparent(cancel);
      expect(sent('tasks/cancel').filter((c) => c.header === tp && c.meta === tp)).toHaveLength(1);
    });

    it("an expired task's tasks/cancel carries its proxy.task.expire span's context", async () => {
      const id = await startTask(`expire-${kind}`, '', 'tks__never-ends');
      const expiry = await eventually(
        async () =>
          exporter.getFinishedSpans().find((s) => s.name === 'proxy.task.expire' && s.attributes['mcpx.task'] === id),
        20_000,
        'the proxy.task.expire span',
      );
      expect(expiry.attributes['mcpx.outcome']).toBe('ok');
      const tp = traceparent(expiry);
      const cancels = short.stats.traces.filter((t) => t.method === 'tasks/cancel');
      expect(cancels.filter((c) => c.header === tp && c.meta === tp)).toHaveLength(1);
    });
  },
);
