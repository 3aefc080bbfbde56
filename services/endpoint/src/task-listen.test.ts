import { describe, expect, it } from 'vitest';
import { TASK_LISTEN_MAX, taskAskOf } from './task-listen.js';

const declared = {
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};
const listen = (notifications: unknown, meta: unknown = declared) => ({
  jsonrpc: '2.0',
  id: 'l-1',
  method: 'subscriptions/listen',
  params: { notifications, _meta: meta },
});

describe('taskAskOf: the task part of a subscriptions/listen', () => {
  it('is nothing for another request, or a listen that names no taskIds', () => {
    expect(taskAskOf({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).toBeUndefined();
    expect(taskAskOf(listen({ toolsListChanged: true }))).toBeUndefined();
    expect(taskAskOf('not json')).toBeUndefined();
  });

  it('takes the ids once each, hands the rest of the filter on, and says whether the rest asks anything', () => {
    const ask = taskAskOf(listen({ taskIds: ['tsk_a', 'tsk_b', 'tsk_a'], toolsListChanged: true }));
    expect(ask).toMatchObject({ id: 'l-1', taskIds: ['tsk_a', 'tsk_b'], restAsks: true, declared: true });
    expect((ask as { rest: { params: { notifications: unknown } } }).rest.params.notifications).toEqual({
      toolsListChanged: true,
    });
    expect(taskAskOf(listen({ taskIds: ['tsk_a'], resourceSubscriptions: [] }))).toMatchObject({ restAsks: false });
    expect(taskAskOf(listen({ taskIds: ['tsk_a'], toolsListChanged: false }))).toMatchObject({ restAsks: false });
  });

  it('knows a client that did not declare the tasks extension', () => {
    expect(taskAskOf(listen({ taskIds: ['tsk_a'] }, {}))).toMatchObject({ declared: false });
    expect(taskAskOf(listen({ taskIds: ['tsk_a'] }, null))).toMatchObject({ declared: false });
  });

  it('refuses malformed ids and more than the bound', () => {
    for (const bad of ['tsk_a', [1], [''], ['x'.repeat(257)], [null]])
      expect(taskAskOf(listen({ taskIds: bad }))).toHaveProperty('invalid');
    const many = Array.from({ length: TASK_LISTEN_MAX + 1 }, (_, i) => `tsk_${i}`);
    expect(taskAskOf(listen({ taskIds: many }))).toEqual({
      invalid: `params.notifications.taskIds: at most ${TASK_LISTEN_MAX} task ids per listen`,
    });
    expect(taskAskOf(listen({ taskIds: many.slice(0, TASK_LISTEN_MAX) }))).toHaveProperty('taskIds');
  });
});
