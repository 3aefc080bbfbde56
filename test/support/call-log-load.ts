import { sql } from 'kysely';
import { createDb } from '@mcpx/db';
import { CallColumns, PostgresActivityStore } from '../../services/proxy/src/activity-store.js';
import type { ProxySystem } from './proxy-system.js';

/**
 * Rows for the call log written by a bench itself, a batch a second, one per call `count`ed while
 * started: the load a recording proxy puts on Postgres, for a side that does not record (the
 * proxy bench's call log comparison). `close` deletes them.
 */
export function matchingLog(system: ProxySystem): {
  count(): void;
  start(): void;
  stop(): Promise<void>;
  close(): Promise<void>;
} {
  const db = createDb(system.db.url, { max: 1 });
  const store = new PostgresActivityStore(db);
  let pending = 0;
  let n = 0;
  let timer: NodeJS.Timeout | undefined;
  const write = async (): Promise<void> => {
    const c = new CallColumns();
    for (; pending > 0; pending--) {
      c.account.push('bench-matching-load');
      c.at.push(Date.now());
      c.agent.push('magent');
      c.run.push('side-match');
      c.callId.push(`match-${n++}`);
      c.server.push('mbench');
      c.tool.push('mbench__echo');
      c.code.push('ok');
      c.outcome.push('ok');
      c.durationMs.push(1);
      c.era.push('modern');
      c.approvalId.push(undefined);
      c.inputRequestId.push(undefined);
      c.taskId.push(undefined);
    }
    await store.write(c);
  };
  let writing: Promise<void> = Promise.resolve();
  return {
    count: () => void pending++,
    start: () => {
      timer = setInterval(() => {
        writing = writing.then(write);
      }, 1_000);
    },
    stop: async () => {
      clearInterval(timer);
      writing = writing.then(write);
      await writing;
    },
    close: async () => {
      await sql`DELETE FROM activity.calls WHERE account_id = 'bench-matching-load'`.execute(db);
      await db.destroy();
    },
  };
}
