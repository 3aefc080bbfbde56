import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { listenChannel } from './listen.js';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const channel = `listen_test_${process.pid}`;

async function admin<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

async function until(cond: () => boolean, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A channel listener on real Postgres: notices reach it; when the server terminates its backend
 * (a restart, an admin), it listens again by itself and says so (`onListening`), and the notices
 * sent after reach it.
 */
describe('listenChannel (real Postgres)', () => {
  const heard: string[] = [];
  let listenings = 0;
  let losses = 0;
  const listener = listenChannel(url, channel, {
    applicationName: `listen-test-${process.pid}`,
    onNotice: (p) => heard.push(p),
    onListening: () => listenings++,
    onLost: () => losses++,
  });
  const notify = (payload: string): Promise<unknown> =>
    admin((c) => c.query('SELECT pg_notify($1, $2)', [channel, payload]));

  afterAll(async () => {
    await listener.stop();
  });

  it('hears a notice, and again after its connection was terminated', async () => {
    await until(() => listener.listening, 'the first LISTEN');
    expect(listenings).toBe(1);
    await notify('one');
    await until(() => heard.includes('one'), 'the first notice');

    await admin((c) =>
      c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        `listen-test-${process.pid}`,
      ]),
    );
    await until(() => listenings === 2, 'listening again');
    expect(losses).toBe(1);
    expect(listener.listening).toBe(true);
    await notify('two');
    await until(() => heard.includes('two'), 'the notice after the loss');
    expect(heard).toEqual(['one', 'two']);
  });

  it('refuses a channel name that is not a plain identifier, before connecting', () => {
    expect(() => listenChannel(url, 'x; DROP TABLE y', { onNotice: () => undefined })).toThrow(/not a channel name/);
  });
});
