import { describe, expect, it } from 'vitest';
import { createLogger, type Logger } from './index.js';

/** A logger whose lines are kept, parsed, in `lines`. */
function capture(opts: { fields?: Record<string, unknown> } = {}): {
  log: Logger;
  lines: Array<Record<string, unknown>>;
  raw: string[];
} {
  const raw: string[] = [];
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('svc', {
    level: 'debug',
    ...opts,
    sink: (line) => {
      raw.push(line);
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { log, lines, raw };
}

/** `{a: {a: … {leaf}}}`, `levels` objects deep. */
function nested(levels: number, leaf: Record<string, unknown>): Record<string, unknown> {
  let v: Record<string, unknown> = leaf;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

describe('logger redaction', () => {
  it('writes nothing deeper than the limit as it is', () => {
    const { log, raw } = capture();
    log.info('deep', { deep: nested(12, { token: 'TOKEN-DEEP', note: 'NOTE-DEEP' }) });
    log.info('deep array', { deep: [[[[[[[[[[{ secret: 'SECRET-DEEP' }]]]]]]]]]] });
    const text = raw.join('\n');
    expect(text).not.toContain('TOKEN-DEEP');
    expect(text).not.toContain('NOTE-DEEP');
    expect(text).not.toContain('SECRET-DEEP');
    expect(text).toContain('[too deep]');
  });

  it('redacts sensitive keys at every level it writes, in objects and arrays', () => {
    const { log, lines, raw } = capture();
    log.info('nested', {
      a: { b: { c: { d: { e: { authorization: 'Bearer AUTH-5' } } } } },
      list: [{ token: 'TOKEN-IN-ARRAY', id: 1 }, [{ password: 'PW-IN-ARRAY' }]],
    });
    expect(raw[0]).not.toMatch(/AUTH-5|TOKEN-IN-ARRAY|PW-IN-ARRAY/);
    expect(lines[0]).toMatchObject({
      a: { b: { c: { d: { e: { authorization: '[redacted]' } } } } },
      list: [{ token: '[redacted]', id: 1 }, [{ password: '[redacted]' }]],
    });
  });

  it('redacts names that carry a credential, not only the bare words', () => {
    const { log, raw, lines } = capture();
    const names = [
      'access_token',
      'refresh_token',
      'id_token',
      'accessToken',
      'client_secret',
      'clientSecret',
      'apiKey',
      'x-api-key',
      'private_key',
      'proxy-authorization',
      'Set-Cookie',
      'credentials',
      'KEY',
    ];
    log.info('names', Object.fromEntries(names.map((n, i) => [n, `VALUE-${i}-X`])));
    expect(raw[0]).not.toContain('-X');
    for (const n of names) expect(lines[0]?.[n]).toBe('[redacted]');
  });

  it('writes an Error as name, message, code, stack and cause, never its other own fields', () => {
    const { log, lines, raw } = capture();
    const cause = Object.assign(new Error('socket closed'), {
      code: 'ECONNRESET',
      token: 'TOKEN-OF-CAUSE',
      request: { body: 'BODY-OF-CAUSE' },
    });
    const err = Object.assign(new Error('upstream refused', { cause }), {
      code: 'E_UPSTREAM',
      headers: { authorization: 'Bearer HEADER-OF-ERROR' },
      config: { url: 'https://example.test', auth: { username: 'u', pass: 'PASS-OF-ERROR' } },
      response: { data: 'RESPONSE-OF-ERROR' },
    });
    log.error('call failed', { err });
    expect(raw[0]).not.toMatch(/TOKEN-OF-CAUSE|BODY-OF-CAUSE|HEADER-OF-ERROR|PASS-OF-ERROR|RESPONSE-OF-ERROR/);
    const written = lines[0]?.err as Record<string, unknown>;
    expect(Object.keys(written).sort()).toEqual(['cause', 'code', 'message', 'name', 'stack']);
    expect(written).toMatchObject({
      name: 'Error',
      message: 'upstream refused',
      code: 'E_UPSTREAM',
      cause: { name: 'Error', message: 'socket closed', code: 'ECONNRESET' },
    });
    expect(written.stack).toContain('upstream refused');
  });

  it('redacts what toJSON returns, and writes bytes as their length', () => {
    const { log, lines, raw } = capture();
    class Credential {
      readonly #value = 'PRIVATE-FIELD';
      toJSON(): unknown {
        return { token: this.#value, kind: 'bearer' };
      }
    }
    log.info('shapes', {
      cred: { toJSON: () => ({ secret: 'SECRET-OF-TOJSON', visible: 1 }) },
      other: new Credential(),
      at: new Date(0),
      body: Buffer.from('SECRET-BYTES'),
    });
    expect(raw[0]).not.toMatch(/SECRET-OF-TOJSON|PRIVATE-FIELD|SECRET-BYTES/);
    expect(lines[0]).toMatchObject({
      cred: { secret: '[redacted]', visible: 1 },
      other: { token: '[redacted]', kind: 'bearer' },
      at: '1970-01-01T00:00:00.000Z',
      body: '[12 bytes]',
    });
  });

  it('bounds the size of what it writes', () => {
    const { log, lines } = capture();
    const wide = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, i]));
    log.info('big', { list: Array.from({ length: 80 }, (_, i) => i), text: 'x'.repeat(20_000), wide });
    const line = lines[0] as { list: unknown[]; text: string; wide: Record<string, unknown> };
    expect(line.list).toHaveLength(51);
    expect(line.list[50]).toBe('[30 more items]');
    expect(line.text.length).toBeLessThan(9_000);
    expect(line.text).toMatch(/\[11808 more characters\]$/);
    expect(Object.keys(line.wide)).toHaveLength(101);
    expect(line.wide['…']).toBe('[50 more fields]');
  });

  it('never throws on what JSON cannot write', () => {
    const { log, lines } = capture();
    const loop: Record<string, unknown> = { name: 'loop' };
    loop.self = loop;
    const hostile = {
      get boom(): never {
        throw new Error('getter threw');
      },
    };
    expect(() => log.info('odd values', { loop, n: 10n, f: () => 1 })).not.toThrow();
    expect(lines[0]).toMatchObject({ loop: { name: 'loop', self: '[circular]' }, n: '10' });
    expect(() => log.info('hostile', { hostile })).not.toThrow();
    expect(lines[1]).toMatchObject({ msg: 'hostile', level: 'info', fields: '[unwritable]' });
  });
});

describe('logger line fields', () => {
  it("keeps the line's own ts, level, service, msg and trace ids; the caller's go under field_<name>", () => {
    const { log, lines } = capture({ fields: { service: 'from-base' } });
    log
      .child({ msg: 'from-child' })
      .warn('the message', { ts: 'yesterday', level: 'debug', traceId: 'not-a-trace', spanId: 's', other: 1 });
    const line = lines[0] as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'warn', service: 'svc', msg: 'the message', other: 1 });
    expect(line.ts).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(line.traceId).toBeUndefined();
    expect(line.spanId).toBeUndefined();
    expect(line).toMatchObject({
      field_ts: 'yesterday',
      field_level: 'debug',
      field_service: 'from-base',
      field_msg: 'from-child',
      field_traceId: 'not-a-trace',
      field_spanId: 's',
    });
  });

  it('drops lines below the level', () => {
    const lines: string[] = [];
    const log = createLogger('svc', { level: 'warn', sink: (l) => lines.push(l) });
    log.info('dropped');
    log.error('kept');
    expect(lines).toHaveLength(1);
  });
});
