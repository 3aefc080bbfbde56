import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ClientClose } from './lean-wire.js';

/** A response's close, alone (the decision logic; the endpoint's cancel tests run it over HTTP). */
const response = (): EventEmitter & ServerResponse => new EventEmitter() as EventEmitter & ServerResponse;

describe('ClientClose', () => {
  it('tells its listeners once when the client goes away before the answer, and aborts a signal asked for', () => {
    const res = response();
    const close = new ClientClose(res);
    const told: string[] = [];
    close.onAbort(() => told.push('a'));
    const forget = close.onAbort(() => told.push('b'));
    forget();
    const signal = close.signal;
    expect(signal.aborted).toBe(false);
    res.emit('close');
    res.emit('close');
    expect(told).toEqual(['a']);
    expect([close.aborted, signal.aborted]).toEqual([true, true]);
    // Asked for after: already aborted; a listener added after is not told (as a signal's).
    expect(close.signal.aborted).toBe(true);
    close.onAbort(() => told.push('late'))();
    expect(told).toEqual(['a']);
  });

  it('a close after the answer was written is not the client going away', () => {
    const res = response();
    const close = new ClientClose(res);
    const told: string[] = [];
    close.onAbort(() => told.push('a'));
    close.done();
    res.emit('close');
    expect(told).toEqual([]);
    expect([close.aborted, close.signal.aborted]).toEqual([false, false]);
  });
});
