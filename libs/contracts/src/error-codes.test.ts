import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERROR_TRAITS, ErrorCodes, WireError, type ErrorCode } from './errors.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const codes = Object.entries(ErrorCodes) as Array<[string, ErrorCode]>;

describe('retryability is a property of each code (one table)', () => {
  it('every code has its traits, and no code that may have run is retryable', () => {
    for (const [, code] of codes) {
      const traits = ERROR_TRAITS[code];
      expect(traits, code).toBeDefined();
      if (traits.ran === 'maybe') expect(traits.retry, `${code} may have run`).toBe('no');
      expect(new WireError(code, 'x').retryable, code).toBe(traits.retry === 'yes');
      expect(new WireError(code, 'x').mayHaveRun, code).toBe(traits.ran === 'maybe');
    }
    expect(Object.keys(ERROR_TRAITS).sort()).toEqual(codes.map(([, c]) => c).sort());
  });

  it('"nothing ran" and "may have run" are different codes', () => {
    expect(new WireError(ErrorCodes.transportError, 'refused').retryable).toBe(true);
    expect(new WireError(ErrorCodes.transportError, 'refused').mayHaveRun).toBe(false);
    for (const code of [ErrorCodes.maybeExecuted, ErrorCodes.callLost, ErrorCodes.timeout, ErrorCodes.cancelled]) {
      const e = new WireError(code, 'lost');
      expect({ code, retryable: e.retryable, mayHaveRun: e.mayHaveRun }).toEqual({
        code,
        retryable: false,
        mayHaveRun: true,
      });
    }
  });

  it('a quota is retryable only when it says when', () => {
    expect(new WireError(ErrorCodes.quotaExceeded, 'full', { limit: 'servers', max: 10 }).retryable).toBe(false);
    expect(new WireError(ErrorCodes.quotaExceeded, 'busy', { limit: 'discoveries', retryAfterMs: 500 }).retryable).toBe(
      true,
    );
    expect(new WireError(ErrorCodes.rateLimited, 'slow down').retryable).toBe(true);
    expect(new WireError(ErrorCodes.unavailable, 'redis is unavailable').retryable).toBe(false);
    expect(
      new WireError(ErrorCodes.unavailable, 'redis is unavailable', { dependency: 'redis', retryAfterMs: 1_000 })
        .retryable,
    ).toBe(true);
  });

  it('keeps the HTTP statuses of the action API', () => {
    const status = Object.fromEntries(codes.map(([, c]) => [c, new WireError(c, 'x').httpStatus]));
    expect(status).toEqual({
      invalid_input: 400,
      invalid_arguments: 400,
      unauthenticated: 401,
      forbidden: 403,
      not_granted: 403,
      approval_refused: 403,
      input_refused: 403,
      outbound_refused: 403,
      not_found: 404,
      conflict: 409,
      approval_required: 409,
      input_required: 409,
      quota_exceeded: 409,
      held_for_review: 409,
      rate_limited: 429,
      timeout: 504,
      server_error: 502,
      transport_error: 502,
      call_lost: 502,
      maybe_executed: 502,
      auth_required: 502,
      cancelled: 502,
      unavailable: 503,
      internal: 500,
    });
  });

  it('rebuilds a typed error from the wire, and narrows its details by code', () => {
    const back = WireError.from(new WireError(ErrorCodes.approvalRequired, 'ask', { approvalId: 'ap-1' }).toJSON());
    expect(back.is(ErrorCodes.approvalRequired) && back.details.approvalId).toBe('ap-1');
    expect(back.is(ErrorCodes.maybeExecuted)).toBe(false);
    expect(WireError.from({ code: 'no_such_code', message: 'm' }).code).toBe('internal');
    expect(WireError.from('garbage')).toMatchObject({ code: 'internal', retryable: true });
  });
});

/** Every .ts file under `dir` (no dependencies, no build output). */
function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'dist-types' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

describe('every declared code is produced and tested', () => {
  const files = ['libs', 'services', 'cli', 'test'].flatMap((d) => sources(join(ROOT, d)));
  const isTest = (f: string): boolean => f.endsWith('.test.ts') || relative(ROOT, f).startsWith('test/');
  const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
  const self = fileURLToPath(new URL('./errors.ts', import.meta.url));

  it.each(codes)('%s (%s) is produced by the code and asserted by a test', (key, code) => {
    const produced = files.filter(
      (f) =>
        !isTest(f) &&
        f !== self &&
        (text.get(f)!.includes(`ErrorCodes.${key}`) || text.get(f)!.includes(`new WireError('${code}'`)),
    );
    const tested = files.filter(
      (f) => isTest(f) && !f.endsWith('error-codes.test.ts') && text.get(f)!.includes(`'${code}'`),
    );
    expect(
      produced.map((f) => relative(ROOT, f)),
      `${code} is never produced`,
    ).not.toEqual([]);
    expect(
      tested.map((f) => relative(ROOT, f)),
      `${code} is never asserted by a test`,
    ).not.toEqual([]);
  });
});
