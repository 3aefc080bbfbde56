import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installTraceContext, setupTelemetry, type Telemetry, type TraceContextKind } from '@mcpx/telemetry';
import { startTasksUpstream, TASKS_EXTENSION, type TasksUpstream } from '../servers/tasks-upstream.js';
import { collectSseMessages } from '../support/fixtures/sse-messages.js';
import { eventually } from '../support/system.js';
import { startEndpointSystem, type EndpointSystem } from './endpoint-harness.js';
import { MODERN_VERSION, modernTaskRequest, post } from './raw-mcp.js';

const TASK_ID = /^tsk_[a-z2-7]{24}$/;

/**
 * A task request to the endpoint (`tasks/get`, `tasks/list`, `tasks/cancel`, 2026-07-28 and
 * 2025-11-25; a listen naming task ids, and each status notification it sends) runs in one trace
 * with the proxy's task service: each `proxy.tasks/<op>` span that answers it is a child of its
 * `endpoint.tasks/<verb>` span. Run with the endpoint's and the
 * proxy's own trace context (`explicit`: it does not follow awaits) and the one of a process
 * shared with others (`async`).
 */
describe.each(['explicit', 'async'] satisfies TraceContextKind[])(
  'the endpoint task spans are the parents of the proxy task spans (%s trace context)',
  (kind) => {
    const exporter = new InMemorySpanExporter();
    let telemetry: Telemetry;
    let sys: EndpointSystem;
    let upstream: TasksUpstream;
    let token: string;

    beforeAll(async () => {
      installTraceContext(kind);
      telemetry = await setupTelemetry({ serviceName: 'endpoint-task-traces-test', spanExporter: exporter });
      [sys, upstream] = await Promise.all([
        startEndpointSystem({ telemetry, servicesTelemetry: telemetry }),
        startTasksUpstream({ durationMs: 60_000, pollIntervalMs: 250 }),
      ]);
      await sys.system.setServer('exports', upstream.url);
      await sys.system.createAgent('tasker', ['exports'], 4);
      ({ token } = await sys.token('tasker'));
    }, 120_000);

    afterAll(async () => {
      await sys?.stop();
      await upstream?.close();
      await telemetry?.shutdown();
      installTraceContext('async');
    });

    const modern = (method: string, params: Record<string, unknown>) =>
      modernTaskRequest(sys.urlOf('tasker'), token, method, params);
    const legacy = (method: string, params: Record<string, unknown>) =>
      post(
        sys.urlOf('tasker'),
        token,
        { jsonrpc: '2.0', id: 1, method, params },
        { 'mcp-protocol-version': '2025-11-25' },
      );

    /** The endpoint's span of `method` not seen before, and the proxy's spans of its trace once `op`'s ended. */
    const seen = new Set<string>();
    async function traced(method: string, op: string): Promise<{ endpoint: ReadableSpan; proxy: ReadableSpan[] }> {
      const endpoint = await eventually(
        async () =>
          exporter.getFinishedSpans().find((s) => s.name === `endpoint.${method}` && !seen.has(s.spanContext().spanId)),
        10_000,
        `the endpoint.${method} span`,
      );
      seen.add(endpoint.spanContext().spanId);
      const { traceId } = endpoint.spanContext();
      const inTrace = (): ReadableSpan[] =>
        exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId && s.name.startsWith('proxy.'));
      await eventually(
        async () => (inTrace().some((s) => s.name === `proxy.tasks/${op}`) ? true : undefined),
        10_000,
        `the proxy.tasks/${op} span in the endpoint's trace`,
      );
      return { endpoint, proxy: inTrace() };
    }

    it("tasks/get, tasks/list and tasks/cancel: each proxy.tasks span is the endpoint task span's child", async () => {
      const created = await modern('tools/call', { name: 'exports__long-export', arguments: { format: 'csv' } });
      const taskId = created.result?.taskId as string;
      expect(taskId).toMatch(TASK_ID);

      const got = await modern('tasks/get', { taskId });
      expect(got.result?.status).toBe('working');
      const get = await traced('tasks/get', 'get');
      expect(get.proxy.length).toBeGreaterThan(0);
      for (const span of get.proxy) {
        expect(span.name).toBe('proxy.tasks/get');
        expect(span.parentSpanContext?.spanId).toBe(get.endpoint.spanContext().spanId);
      }
      expect(get.proxy[0]!.attributes).toMatchObject({ 'mcpx.task': taskId, 'mcpx.outcome': 'ok' });

      const listed = await legacy('tasks/list', {});
      expect((listed.result?.tasks as Array<{ taskId: string }>).map((t) => t.taskId)).toContain(taskId);
      const list = await traced('tasks/list', 'list');
      expect(list.proxy.map((s) => s.name)).toEqual(['proxy.tasks/list']);
      expect(list.proxy[0]!.parentSpanContext?.spanId).toBe(list.endpoint.spanContext().spanId);

      const cancelled = await legacy('tasks/cancel', { taskId });
      expect(cancelled.result?.status).toBe('cancelled');
      const cancel = await traced('tasks/cancel', 'cancel');
      expect(cancel.proxy.map((s) => s.name).sort()).toEqual(['proxy.tasks/cancel', 'proxy.tasks/get']);
      for (const span of cancel.proxy)
        expect(span.parentSpanContext?.spanId).toBe(cancel.endpoint.spanContext().spanId);
    });

    it("a listen naming a task, and the task's status notification on it", async () => {
      const created = await modern('tools/call', { name: 'exports__long-export', arguments: { format: 'pdf' } });
      const taskId = created.result?.taskId as string;
      expect(taskId).toMatch(TASK_ID);
      const ctl = new AbortController();
      const res = await fetch(sys.urlOf('tasker'), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-method': 'subscriptions/listen',
          'mcp-protocol-version': MODERN_VERSION,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 'listen-1',
          method: 'subscriptions/listen',
          params: {
            notifications: { taskIds: [taskId] },
            _meta: {
              'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
              'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXTENSION]: {} } },
              'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            },
          },
        }),
        signal: ctl.signal,
      });
      const messages: Array<Record<string, unknown>> = [];
      collectSseMessages(res.body as ReadableStream<Uint8Array>, messages, () => {});
      try {
        await eventually(
          async () => (messages.some((m) => m.method === 'notifications/tasks') ? true : undefined),
          10_000,
          "the task's first notification",
        );
      } finally {
        ctl.abort();
      }
      for (const method of ['tasks/listen', 'tasks/status']) {
        const { endpoint, proxy } = await traced(method, 'get');
        for (const span of proxy) {
          expect(span.name, method).toMatch(/^proxy\.tasks\//);
          expect(span.parentSpanContext?.spanId, method).toBe(endpoint.spanContext().spanId);
        }
      }
      await modern('tasks/cancel', { taskId });
    });
  },
);
