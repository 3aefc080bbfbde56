import { metrics } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import type { TaskEvent } from '@mcpx/contracts';
import { TaskEventsReplay } from './task-events-replay.js';

const event = (task: string, state: TaskEvent['state']): TaskEvent => ({
  account: 'acct',
  agent: 'agent',
  task,
  state,
  at: 0,
});

describe('TaskEventsReplay', () => {
  const setUp = () => {
    let now = 1_000_000;
    const sent: Array<[string, string]> = [];
    const replay = new TaskEventsReplay(
      (subject, e) => sent.push([subject, e.state]),
      metrics.getMeter('test'),
      () => now,
    );
    return { replay, sent, tick: (ms: number) => (now += ms) };
  };

  it('publishes at once, and again after a reconnection only what may have been lost: each task once, its latest', () => {
    const { replay, sent, tick } = setUp();
    replay.send('s.old', event('old', 'completed'));
    tick(10_000);
    replay.send('s.a', event('a', 'working'));
    tick(500);
    replay.down();
    tick(1_000);
    replay.send('s.a', event('a', 'completed'));
    replay.send('s.b', event('b', 'input_required'));
    expect(sent).toHaveLength(4);
    tick(5_000);
    expect(replay.up()).toBe(2);
    expect(sent.slice(4)).toEqual([
      ['s.a', 'completed'],
      ['s.b', 'input_required'],
    ]);
  });

  it('replays nothing without a disconnection, nor twice for one', () => {
    const { replay, sent, tick } = setUp();
    replay.send('s.a', event('a', 'completed'));
    expect(replay.up()).toBe(0);
    replay.down();
    tick(100);
    expect(replay.up()).toBe(1);
    expect(replay.up()).toBe(0);
    expect(sent).toHaveLength(2);
  });

  it('forgets what is older than its keep', () => {
    const { replay, tick } = setUp();
    replay.send('s.a', event('a', 'completed'));
    tick(200_000);
    replay.down();
    expect(replay.up()).toBe(0);
  });
});
