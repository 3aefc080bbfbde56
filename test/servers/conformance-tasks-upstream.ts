import { createServer, type Server as HttpServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { createMcpHandler, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';
import { TASKS_EXTENSION } from './tasks-upstream.js';

interface FixtureTask {
  taskId: string;
  status: 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
  /** Questions still waiting for their answer (`inputRequests` while `input_required`), and the answers so far. */
  questions: Record<string, { method: string; params: Record<string, unknown> }>;
  answers: Record<string, unknown>;
  createdAt: string;
  lastUpdatedAt: string;
  endsAt: number;
  ending: { result: Record<string, unknown> } | { error: { code: number; message: string } };
}

const TTL_MS = 600_000;
const POLL_MS = 200;

/**
 * The fixtures the conformance suite's tasks scenarios (SEP-2663) call by name, on a modern
 * (2026-07-28 only) SDK v2 server that speaks the tasks extension, for running those scenarios
 * through the agent endpoint's per-server face (test/endpoint/endpoint-tasks-conformance.test.ts):
 * `greet` (sync), `slow_compute` (`seconds` then a result), `failing_job` (a tool execution
 * error after about a second), `protocol_error_job` (a protocol error after about a second),
 * `confirm_delete` and `multi_input` (a task that asks one question, or two at once, in
 * `inputRequests`, answered with `tasks/update`, then completes reporting the answers). A
 * call becomes a task when its request declares the extension; otherwise it runs at once.
 */
export async function startConformanceTasksUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const tasks = new Map<string, FixtureTask>();
  const now = (): string => new Date().toISOString();
  const text = (s: string, isError = false): Record<string, unknown> => ({
    content: [{ type: 'text', text: s }],
    ...(isError ? { isError: true } : {}),
  });
  const confirmForm = (message: string, field: string): { method: string; params: Record<string, unknown> } => ({
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message,
      requestedSchema: {
        type: 'object',
        properties: { [field]: { type: field === 'confirm' ? 'boolean' : 'string' }, confirm: { type: 'boolean' } },
      },
    },
  });
  const settle = (t: FixtureTask): void => {
    if (t.status === 'input_required' && Object.keys(t.questions).length === 0) {
      // Every question answered: the task goes on, and reports what it was told.
      t.status = 'working';
      t.endsAt = Date.now() + 300;
      t.ending = { result: text(`answered ${JSON.stringify(t.answers)}`) };
      t.lastUpdatedAt = now();
    }
    if (t.status !== 'working' || Date.now() < t.endsAt) return;
    t.status = 'result' in t.ending ? 'completed' : 'failed';
    t.lastUpdatedAt = now();
  };
  const wire = (t: FixtureTask): Record<string, unknown> => ({
    taskId: t.taskId,
    status: t.status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs: TTL_MS,
    pollIntervalMs: POLL_MS,
    ...(t.status === 'input_required' ? { inputRequests: t.questions } : {}),
    ...(t.status === 'completed' && 'result' in t.ending ? { result: t.ending.result } : {}),
    ...(t.status === 'failed' && 'error' in t.ending ? { error: t.ending.error } : {}),
  });
  const factory = (): Server => {
    const server = new Server(
      { name: 'conformance-tasks-upstream', version: '0.1.0' },
      { capabilities: { tools: {}, extensions: { [TASKS_EXTENSION]: {} } } },
    );
    const schema = (properties: Record<string, unknown>) => ({ type: 'object', properties });
    server.setRequestHandler(
      'tools/list',
      () =>
        ({
          tools: [
            { name: 'greet', description: 'Says hello.', inputSchema: schema({ name: { type: 'string' } }) },
            {
              name: 'slow_compute',
              description: 'Sleeps, then answers.',
              inputSchema: schema({ seconds: { type: 'number' }, label: { type: 'string' } }),
            },
            { name: 'failing_job', description: 'Fails as a tool.', inputSchema: schema({}) },
            { name: 'protocol_error_job', description: 'Fails with a protocol error.', inputSchema: schema({}) },
            {
              name: 'confirm_delete',
              description: 'Asks to confirm, then deletes.',
              inputSchema: schema({ filename: { type: 'string' } }),
            },
            { name: 'multi_input', description: 'Asks two questions at once.', inputSchema: schema({}) },
          ],
          ttlMs: 0,
          cacheScope: 'public',
        }) as never,
    );
    server.setRequestHandler('tools/call', async (request) => {
      const caps = server.getClientCapabilities() as { extensions?: Record<string, unknown> } | undefined;
      const asked = caps?.extensions?.[TASKS_EXTENSION] !== undefined;
      const args = request.params.arguments ?? {};
      const name = request.params.name;
      if (name === 'greet') return text(`Hello, ${typeof args.name === 'string' ? args.name : 'world'}!`) as never;
      const seconds = typeof args.seconds === 'number' ? args.seconds : 1;
      const label = typeof args.label === 'string' ? args.label : 'job';
      const ending: FixtureTask['ending'] =
        name === 'slow_compute'
          ? { result: text(`computed ${label}`) }
          : name === 'failing_job'
            ? { result: text('the job failed', true) }
            : { error: { code: ProtocolErrorCode.InternalError, message: 'the job panicked' } };
      const delayMs = name === 'slow_compute' ? seconds * 1000 : 1000;
      if (!asked) {
        await new Promise((r) => setTimeout(r, Math.min(delayMs, 5_000)));
        if ('error' in ending) throw new ProtocolError(ending.error.code, ending.error.message);
        return ending.result as never;
      }
      const questions: FixtureTask['questions'] =
        name === 'confirm_delete'
          ? {
              confirm: confirmForm(
                `Delete ${typeof args.filename === 'string' ? args.filename : 'the file'}?`,
                'confirm',
              ),
            }
          : name === 'multi_input'
            ? { first: confirmForm('Your name?', 'name'), second: confirmForm('Another name?', 'name') }
            : {};
      const t: FixtureTask = {
        taskId: randomUUID(),
        status: Object.keys(questions).length > 0 ? 'input_required' : 'working',
        questions,
        answers: {},
        createdAt: now(),
        lastUpdatedAt: now(),
        endsAt: Date.now() + delayMs,
        ending,
      };
      tasks.set(t.taskId, t);
      // A CreateTaskResult carries no inputRequests (they live on tasks/get): the task is created working.
      const { inputRequests: _asked, ...created } = wire(t);
      return { resultType: 'task', ...created, status: t.status === 'input_required' ? 'working' : t.status } as never;
    });
    const taskIdParams = { params: z.object({ taskId: z.string() }).passthrough() };
    const find = (taskId: string): FixtureTask => {
      const t = tasks.get(taskId);
      if (t === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, 'Task not found');
      settle(t);
      return t;
    };
    server.setRequestHandler('tasks/get', taskIdParams, (params) => wire(find(params.taskId)));
    server.setRequestHandler('tasks/cancel', taskIdParams, (params) => {
      const t = find(params.taskId);
      if (t.status === 'working' || t.status === 'input_required')
        Object.assign(t, { status: 'cancelled', lastUpdatedAt: now() });
      return {};
    });
    server.setRequestHandler('tasks/update', taskIdParams, (params, ctx) => {
      const t = find(params.taskId);
      // Answers to questions not asked (or asked no more) are ignored, as SEP-2663 says.
      // The SDK lifts a request's `inputResponses` off its params (they are the MRTR retry's field).
      const responses = (ctx.mcpReq as { inputResponses?: Record<string, unknown> }).inputResponses ?? {};
      for (const [key, answer] of Object.entries(responses)) {
        if (!(key in t.questions)) continue;
        t.answers[key] = answer;
        delete t.questions[key];
      }
      settle(t);
      return {};
    });
    return server;
  };
  const handler = createMcpHandler(factory, { legacy: 'reject' });
  const node = toNodeHandler(handler);
  const http: HttpServer = createServer((req, res) => void node(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const port = (http.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await handler.close();
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
