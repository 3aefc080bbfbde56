import { describe, expect, it } from 'vitest';
import { redactErrorChain, redactSecrets, requestSecrets, SecretScrubber } from './scrub.js';

const TOKEN = 'tok_Live-9f8e7d6c5b4a/xyz+q=';
const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe('the scrub rule', () => {
  const scrubber = new SecretScrubber([`Bearer ${TOKEN}`]);

  it.each([
    ['the whole header value', `Bearer ${TOKEN}`],
    ['the bare token', TOKEN],
    ['upper case', TOKEN.toUpperCase()],
    ['lower case', TOKEN.toLowerCase()],
    ['percent-encoded', encodeURIComponent(TOKEN)],
    ['percent-encoded, lower-case hex', encodeURIComponent(TOKEN).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    [
      'every character percent-encoded',
      [...Buffer.from(TOKEN)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''),
    ],
    ['JSON-escaped', JSON.stringify(TOKEN).slice(1, -1).replace(/\//g, '\\/')],
    ['base64', b64(TOKEN)],
    ['base64url without padding', Buffer.from(TOKEN).toString('base64url')],
    ['base64 of the whole header', b64(`Authorization: Bearer ${TOKEN}`)],
    ['base64 at the second alignment', b64(`x${TOKEN}`)],
    ['base64 at the third alignment', b64(`xy${TOKEN}`)],
  ])('redacts %s', (_what, form) => {
    const out = scrubber.redact(`upstream said: <${form}> and no more`);
    expect(out).toContain('[redacted]');
    expect(out.toLowerCase()).not.toContain(TOKEN.toLowerCase().slice(4, 16));
    expect(out).not.toContain(b64(TOKEN).slice(4, 16));
  });

  it('leaves `Bearer` and the text around the secret readable', () => {
    expect(scrubber.redact(`token Bearer ${TOKEN} refused`)).toBe('token [redacted] refused');
    expect(scrubber.redact(`token ${TOKEN} refused`)).toBe('token [redacted] refused');
  });

  it('derives a Basic credential: user:pass, each half, and their base64', () => {
    const basic = new SecretScrubber([`Basic ${b64('alice-user:s3cr3t-pass-word')}`]);
    for (const form of [
      'alice-user:s3cr3t-pass-word',
      's3cr3t-pass-word',
      'S3CR3T-PASS-WORD',
      'alice-user',
      b64('s3cr3t-pass-word'),
      encodeURIComponent('alice-user:s3cr3t-pass-word'),
    ]) {
      expect(basic.redact(`x ${form} y`)).toBe('x [redacted] y');
    }
  });

  it('spaces as + or %20 in a form-encoded echo', () => {
    const spaced = new SecretScrubber(['open sesame please']);
    expect(spaced.redact('q=open+sesame+please&x=1')).toBe('q=[redacted]&x=1');
    expect(spaced.redact('q=open%20sesame%20please')).toBe('q=[redacted]');
  });

  it('skips values under 4 characters and matches short ones only as whole words', () => {
    const short = new SecretScrubber(['abc', 'k3y9z']);
    expect(short.redact('abc abcdef')).toBe('abc abcdef');
    expect(short.redact('key k3y9z, not k3y9zz or xk3y9z')).toBe('key [redacted], not k3y9zz or xk3y9z');
    expect(new SecretScrubber([]).active).toBe(false);
  });

  it('redacts every string and key of a result in place, never requestState or binary data', () => {
    const result = {
      content: [
        { type: 'text', text: `echo ${TOKEN}` },
        { type: 'image', data: b64(TOKEN), mimeType: 'image/png' },
      ],
      structuredContent: { [TOKEN]: { deep: [[`x${TOKEN.toUpperCase()}`]] } },
      isError: true,
      requestState: `state-${TOKEN}`,
    };
    new SecretScrubber([TOKEN]).redactJson(result);
    expect(result.content[0]).toEqual({ type: 'text', text: 'echo [redacted]' });
    expect(result.content[1]?.data).toBe(b64(TOKEN));
    expect(result.structuredContent).toEqual({ '[redacted]': { deep: [['x[redacted]']] } });
    expect(result.requestState).toBe(`state-${TOKEN}`);
  });

  it('takes the URL query values, userinfo and fragment as secrets', () => {
    expect(
      requestSecrets('https://u%40x:p%20w@h.example/mcp?api_key=k%2Fv&a=1#frag', { authorization: 'Bearer t' }),
    ).toEqual(['Bearer t', 'u@x', 'p w', 'k/v', '1', 'frag']);
    expect(redactSecrets('key=k/vvvvvv', requestSecrets('https://h.example/mcp?api_key=k%2Fvvvvvv'))).toBe(
      'key=[redacted]',
    );
  });

  it('rewrites the messages along an error chain', () => {
    const inner = new Error(`body: ${b64(TOKEN)}`);
    const outer = new Error(`HTTP 500 ${TOKEN}`, { cause: new AggregateError([inner], 'many') });
    redactErrorChain(outer, [TOKEN]);
    expect(outer.message).toBe('HTTP 500 [redacted]');
    expect(outer.stack).not.toContain(TOKEN);
    // At most the last base64 character of the secret's tail (a few bits) and the padding stay.
    expect(inner.message).toMatch(/^body: \[redacted\].{0,3}$/);
  });

  it('scans a large result in bounded time per byte (linear)', () => {
    const big = new SecretScrubber([`Bearer ${TOKEN}`, 'another-secret-value-123456', 'https://h/?q=1']);
    const text = 'lorem ipsum %20 \\u0020 dolor '.repeat(40_000) + TOKEN;
    expect(big.redact(text).endsWith('[redacted]')).toBe(true);
  });
});
