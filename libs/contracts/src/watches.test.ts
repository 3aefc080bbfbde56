import { describe, expect, it } from 'vitest';
import { encodePayload } from './codec.js';
import { makeSubjects } from './subjects.js';
import {
  decodeUpstreamNotice,
  decodeWatchReply,
  decodeWatchRequest,
  encodeWatchRequest,
  type WatchRequest,
} from './watches.js';

const hold: WatchRequest = {
  op: 'hold',
  account: 'acct',
  agent: 'agent',
  holder: 'endpoint-1',
  server: 'db.main',
  kind: 'resource',
  uri: 'test://watched/1',
};
const fieldOf = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return (err as { details?: { field?: unknown } }).details?.field;
  }
  return undefined;
};

describe('upstream subscriptions (mcp.proxy.watch, mcp.notices.<acct>.<server>)', () => {
  it('round-trips a hold and keeps only its fields', () => {
    expect(decodeWatchRequest(encodeWatchRequest(hold))).toEqual(hold);
    expect(decodeWatchRequest(encodePayload({ ...hold, extra: 'x' }))).toEqual(hold);
    const lists = { ...hold, kind: 'lists' as const, uri: undefined };
    expect(
      decodeWatchRequest(
        encodePayload({ op: 'release', account: 'acct', agent: 'agent', holder: 'e', server: 'db', kind: 'lists' }),
      ),
    ).toMatchObject({ op: 'release', kind: 'lists' });
    expect(fieldOf(() => encodeWatchRequest({ ...lists, uri: 'test://x' }))).toBe('uri');
  });

  it('refuses a hold naming the wrong things, the field named', () => {
    expect(fieldOf(() => decodeWatchRequest(encodePayload({ ...hold, uri: undefined })))).toBe('uri');
    expect(fieldOf(() => decodeWatchRequest(encodePayload({ ...hold, uri: 'javascript:alert(1)' })))).toBe('uri');
    expect(fieldOf(() => decodeWatchRequest(encodePayload({ ...hold, uri: 'file:///srv/../etc/passwd' })))).toBe('uri');
    expect(fieldOf(() => decodeWatchRequest(encodePayload({ ...hold, account: 'a.b' })))).toBe('account');
    expect(fieldOf(() => decodeWatchRequest(encodePayload({ ...hold, op: 'steal' })))).toBe('op');
    expect(fieldOf(() => decodeWatchRequest(encodePayload({ ...hold, kind: 'everything' })))).toBe('kind');
  });

  it('decodes a notice by its field rules: an update names its URI, a list change none, a count of at least 1', () => {
    const notice = { account: 'acct', server: 'db.main', kind: 'updated', uri: 'test://watched/1', count: 3 };
    expect(decodeUpstreamNotice(encodePayload(notice))).toEqual(notice);
    expect(decodeUpstreamNotice(encodePayload({ account: 'acct', server: 'db', kind: 'tools', count: 1 }))).toEqual({
      account: 'acct',
      server: 'db',
      kind: 'tools',
      count: 1,
    });
    expect(fieldOf(() => decodeUpstreamNotice(encodePayload({ ...notice, uri: undefined })))).toBe('uri');
    expect(fieldOf(() => decodeUpstreamNotice(encodePayload({ ...notice, kind: 'tools' })))).toBe('uri');
    expect(fieldOf(() => decodeUpstreamNotice(encodePayload({ ...notice, count: 0 })))).toBe('count');
    expect(fieldOf(() => decodeUpstreamNotice(encodePayload({ ...notice, uri: 'test://x\u202Egnp' })))).toBe('uri');
  });

  it('decodes a reply strictly, a malformed one a typed internal naming the field', () => {
    expect(decodeWatchReply(encodePayload({ ok: true, instance: 'p1', upstream: 'live' }))).toEqual({
      ok: true,
      instance: 'p1',
      upstream: 'live',
    });
    expect(
      decodeWatchReply(
        encodePayload({ ok: false, instance: 'p1', error: { code: 'not_granted', message: 'no', details: {} } }),
      ),
    ).toMatchObject({ ok: false, error: { code: 'not_granted' } });
    expect(fieldOf(() => decodeWatchReply(encodePayload({ ok: true, instance: 'p1', upstream: 'maybe' })))).toBe(
      'reply.upstream',
    );
    expect(fieldOf(() => decodeWatchReply(encodePayload({ ok: true, instance: 'a.b', upstream: 'live' })))).toBe(
      'reply.instance',
    );
  });

  it('names a notice subject per account and server; a name that is not one token throws, never rewritten', () => {
    const s = makeSubjects('t1.');
    expect(s.upstreamNotice('acct', 'db-main_1')).toBe('t1.mcp.notices.acct.db-main_1');
    // `db.main` rewritten to `db_main` would publish one server's notices on another's subject.
    for (const bad of ['db.main', '*', '>', 'a b', 'db.>']) expect(() => s.upstreamNotice('acct', bad)).toThrow();
    expect(s.proxyInstanceWatch('proxy-1')).toBe('t1.mcp.proxy.proxy-1.watch');
    expect(() => s.upstreamNotice('a.b', 'db')).toThrow();
  });
});
