import { describe, expect, it } from 'vitest';
import { McpClientError } from './errors.js';
import { createdTaskOf, offersTasksExtension, upstreamTaskOf, withTaskSupport } from './tasks.js';

describe('tasks in both dialects (docs/tasks.md)', () => {
  it('reads a created task of either dialect, and a result that is none', () => {
    expect(
      createdTaskOf({ task: { taskId: 't1', status: 'working', ttl: 60_000, pollInterval: 500 } }, 'legacy'),
    ).toEqual({ taskId: 't1', status: 'working', ttlMs: 60_000, pollIntervalMs: 500 });
    expect(
      createdTaskOf(
        {
          resultType: 'task',
          taskId: 't2',
          status: 'working',
          ttlMs: null,
          pollIntervalMs: 250,
          statusMessage: 'queued',
        },
        'modern',
      ),
    ).toEqual({
      taskId: 't2',
      status: 'working',
      ttlMs: null,
      pollIntervalMs: 250,
      statusMessage: 'queued',
    });
    expect(createdTaskOf({ content: [{ type: 'text', text: 'hi' }] }, 'legacy')).toBeUndefined();
    expect(createdTaskOf({ resultType: 'complete', content: [] }, 'modern')).toBeUndefined();
  });

  it('a task that does not hold together is a protocol_error naming what is wrong', () => {
    for (const [value, why] of [
      [{ taskId: '', status: 'working' }, 'taskId'],
      [{ taskId: 'x'.repeat(300), status: 'working' }, 'taskId'],
      [{ taskId: 't', status: 'sleeping' }, 'status'],
      [{ taskId: 't', status: 'completed' }, 'a completed task without its result'],
    ] as const) {
      const err = (() => {
        try {
          upstreamTaskOf(value, 'modern', 'tasks/get');
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(McpClientError);
      expect((err as McpClientError).code).toBe('protocol_error');
      expect((err as McpClientError).message).toContain(why);
    }
  });

  it('bounds what it keeps of a server: the status message, a failed task’s error', () => {
    const t = upstreamTaskOf(
      {
        taskId: 't',
        status: 'failed',
        statusMessage: 'm'.repeat(5_000),
        error: { code: -32000, message: 'e'.repeat(5_000) },
      },
      'modern',
      'tasks/get',
    );
    expect(t.statusMessage).toHaveLength(1_024);
    expect(t.error?.message).toHaveLength(1_024);
    expect(t.error?.code).toBe(-32000);
  });

  it("records a modern server's extension as each tool's optional task support; legacy tools stay as listed", () => {
    const caps = { tools: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } };
    expect(offersTasksExtension(caps)).toBe(true);
    expect(offersTasksExtension({ extensions: { 'io.modelcontextprotocol/tasks': true } })).toBe(false);
    const tools = [{ name: 'a', inputSchema: { type: 'object' as const } }];
    expect(withTaskSupport(tools, 'modern', caps)).toEqual([
      { name: 'a', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
    ]);
    expect(withTaskSupport(tools, 'modern', { tools: {} })).toBe(tools);
    expect(withTaskSupport(tools, 'legacy', caps)).toBe(tools);
  });
});
