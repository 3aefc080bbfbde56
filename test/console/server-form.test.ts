import { describe, expect, it } from 'vitest';
// The console's own form module, loaded as the browser loads it.
import { MAX_HEADERS, parseHeaderLines, serverConfig } from '../../console/public/server-form.js';

const SECRET = 'v4lue-that-must-not-be-echoed';

describe('custom headers, one per line', () => {
  it('parses Name: value lines, skipping blank ones; the value is everything after the first colon', () => {
    expect(parseHeaderLines('X-Acme-Token: abc123\n\n  X-Tenant:acme  \r\nAuthorization: Basic dTpw:extra')).toEqual({
      headers: { 'X-Acme-Token': 'abc123', 'X-Tenant': 'acme', Authorization: 'Basic dTpw:extra' },
      errors: [],
    });
  });

  it('names the line of every mistake and never repeats a value', () => {
    const text = [`X-Ok: ${SECRET}`, `no colon ${SECRET}`, `: ${SECRET}`, `Bad Name: ${SECRET}`, `Host: ${SECRET}`, `x-ok: ${SECRET}`, 'X-Empty:   '].join('\n');
    const { headers, errors } = parseHeaderLines(text);
    expect(headers).toEqual({ 'X-Ok': SECRET });
    expect(errors.map((e) => e.line)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(errors[0]!.message).toContain('no colon');
    expect(errors[2]!.message).toContain('letters, digits and -');
    expect(errors[3]!.message).toContain('set by the transport');
    expect(errors[4]!.message).toContain('already given on line 1');
    expect(errors[5]!.message).toContain('has no value');
    expect(JSON.stringify(errors)).not.toContain(SECRET);
  });

  it('bounds the number of headers and the size of a value', () => {
    const many = Array.from({ length: MAX_HEADERS + 1 }, (_, i) => `X-H${i}: v`).join('\n');
    expect(parseHeaderLines(many).errors).toEqual([{ line: 0, message: `at most ${MAX_HEADERS} headers` }]);
    expect(parseHeaderLines(`X-Big: ${'a'.repeat(4097)}`).errors[0]).toMatchObject({ line: 1, message: expect.stringContaining('4096 bytes') });
  });
});

describe('the add-server form as a SetMcpServer config', () => {
  const url = 'https://mcp.example.com/mcp';

  it('builds each of the four auth methods as the registry takes them', () => {
    expect(serverConfig({ url, auth: 'none' })).toEqual({ config: { url, auth: 'none' }, errors: [] });
    expect(serverConfig({ url, auth: 'oauth', transport: 'sse' })).toEqual({ config: { url, auth: 'oauth', transport: 'sse' }, errors: [] });
    expect(serverConfig({ url, auth: 'oauth', clientId: 'cid', clientSecret: 's' }).config.oauth).toEqual({ clientId: 'cid', clientSecret: 's' });
    expect(serverConfig({ url, auth: 'bearer', token: `  Bearer ${SECRET}\n` })).toEqual({ config: { url, auth: 'bearer', token: SECRET }, errors: [] });
    // Custom headers are all secret headers: every one is stored encrypted.
    expect(serverConfig({ url, auth: 'headers', headers: 'X-A: 1\nX-B: 2' })).toEqual({ config: { url, auth: 'headers', secretHeaders: { 'X-A': '1', 'X-B': '2' } }, errors: [] });
  });

  it('names the field of every mistake', () => {
    const fields = (values: Record<string, string>) => serverConfig(values).errors.map((e) => e.field);
    expect(fields({ url: ' ', auth: 'none' })).toEqual(['url']);
    expect(fields({ url, auth: 'basic' })).toEqual(['auth']);
    expect(fields({ url, auth: 'bearer', token: '' })).toEqual(['token']);
    expect(fields({ url, auth: 'bearer', token: 'two words' })).toEqual(['token']);
    expect(fields({ url, auth: 'headers', headers: '\n' })).toEqual(['headers']);
    expect(serverConfig({ url, auth: 'headers', headers: 'X-A: 1\nbroken' }).errors).toEqual([{ field: 'headers', line: 2, message: 'expected "Name: value" (no colon)' }]);
    expect(fields({ url, auth: 'oauth', clientSecret: 's' })).toEqual(['clientSecret']);
    expect(JSON.stringify(serverConfig({ url, auth: 'bearer', token: `a ${SECRET}` }).errors)).not.toContain(SECRET);
  });
});
