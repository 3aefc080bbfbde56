import { describe, expect, it } from 'vitest';
import { taskStatusLine } from './task-commands.js';

describe('taskStatusLine', () => {
  it('is one line: the task, its state, the error code, and the server text', () => {
    expect(taskStatusLine({ task: 'tsk_a', state: 'working', statusMessage: 'exporting (3 s left)' })).toBe(
      'task tsk_a working: exporting (3 s left)',
    );
    expect(taskStatusLine({ task: 'tsk_a', state: 'failed', errorCode: 'task_lost' })).toBe(
      'task tsk_a failed (task_lost)',
    );
    expect(taskStatusLine({ task: 'tsk_a', state: 'completed', statusMessage: '' })).toBe('task tsk_a completed');
  });

  it("keeps a server's status text from posing as lines of its own or driving the terminal", () => {
    const line = taskStatusLine({
      task: 'tsk_a',
      state: 'working',
      statusMessage: 'ok\ntask tsk_a completed\r\n\u001b[2Jgone',
    });
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toBe('task tsk_a working: ok task tsk_a completed <U+001B>[2Jgone');
  });
});
