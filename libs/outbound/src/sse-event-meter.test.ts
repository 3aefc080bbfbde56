import { describe, expect, it } from 'vitest';
import { SseEventMeter } from './sse-event-meter.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

/** The size of the largest event (its lines and line ends; the unterminated tail too), the slow way. */
function largestEvent(text: string): number {
  let largest = 0;
  let current = 0;
  let lineStart = true;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n' || c === '\r') {
      const crlf = c === '\r' && text[i + 1] === '\n';
      if (lineStart) current = 0;
      else current += crlf ? 2 : 1;
      if (crlf) i++;
      lineStart = true;
    } else {
      current += 1;
      lineStart = false;
    }
    largest = Math.max(largest, current);
  }
  return largest;
}

/** A small deterministic generator (no flaky seeds). */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function feed(meter: SseEventMeter, text: string, cuts: number[]): boolean {
  const all = bytes(text);
  let from = 0;
  for (const cut of [...cuts, all.length]) {
    if (!meter.take(all.subarray(from, cut))) return false;
    from = cut;
  }
  return true;
}

describe('SseEventMeter', () => {
  it('admits an event of exactly the bound and refuses one byte more', () => {
    // "data: xxxx\n" is the event's size; the blank line that ends it does not count.
    const event = (n: number): string => `data: ${'x'.repeat(n - 7)}\n\n`;
    expect(new SseEventMeter(100).take(bytes(event(100).repeat(5)))).toBe(true);
    expect(new SseEventMeter(100).take(bytes(event(101)))).toBe(false);
  });

  it('counts a line that never ends as it grows, across chunks', () => {
    const meter = new SseEventMeter(1000);
    const chunk = bytes('x'.repeat(300));
    expect(meter.take(bytes('data: '))).toBe(true);
    expect(meter.take(chunk)).toBe(true);
    expect(meter.take(chunk)).toBe(true);
    expect(meter.take(chunk)).toBe(true);
    expect(meter.take(chunk)).toBe(false);
  });

  it('resets on a blank line in each line-end spelling, also when a CRLF is split between chunks', () => {
    for (const end of ['\n', '\r', '\r\n']) {
      const meter = new SseEventMeter(20);
      for (let i = 0; i < 50; i++)
        expect(meter.take(bytes(`data: 0123456789${end}${end}`)), JSON.stringify(end)).toBe(true);
    }
    const split = new SseEventMeter(14);
    expect(split.take(bytes('data: 12345\r'))).toBe(true);
    expect(split.take(bytes('\n\r'))).toBe(true);
    expect(split.take(bytes('\ndata: 12345\r\n'))).toBe(true);
    expect(split.take(bytes('x'))).toBe(true);
    expect(split.take(bytes('y'))).toBe(false);
  });

  it('counts events ended by a blank line: exactly the bound passes, one more fails', () => {
    const meter = new SseEventMeter(100, 3);
    // Blank lines between events are not events.
    expect(meter.take(bytes('data: 1\n\n\n\ndata: 2\n\n: ping\n\n'))).toBe(true);
    expect(meter.take(bytes('\n\ndata: 4'))).toBe(true);
    expect(meter.take(bytes('\n'))).toBe(true);
    expect(meter.take(bytes('\n'))).toBe(false);
    expect(meter.passed).toBe('count');
  });

  it('agrees with a byte-by-byte reference on random streams and random chunkings', () => {
    const random = prng(11);
    const alphabet = ['a', 'b', ':', ' ', '\n', '\r', '\r\n', '\n\n', 'data: ', 'é'];
    for (let round = 0; round < 400; round++) {
      let text = '';
      const parts = Math.floor(random() * 60);
      for (let i = 0; i < parts; i++)
        text += alphabet[Math.floor(random() * alphabet.length)]!.repeat(1 + Math.floor(random() * 8));
      const size = bytes(text).length;
      const cuts: number[] = [];
      for (let at = 0; at < size; at += 1 + Math.floor(random() * 7)) cuts.push(at);
      // The reference counts characters: keep the text one byte per character for it.
      const ascii = text.replace(/é/g, 'e');
      const largest = largestEvent(ascii);
      expect(feed(new SseEventMeter(Math.max(1, largest)), ascii, cuts), JSON.stringify([ascii, cuts, largest])).toBe(
        true,
      );
      if (largest > 1)
        expect(feed(new SseEventMeter(largest - 1), ascii, cuts), JSON.stringify([ascii, cuts, largest])).toBe(false);
    }
  });
});
