import { describe, expect, it } from 'vitest';
import { isHtmlMimeType, screenAppContents } from './app-resources.js';

describe('ui:// resources that are not HTML', () => {
  it('takes HTML by its media type’s essence', () => {
    for (const t of ['text/html;profile=mcp-app', 'text/html', 'TEXT/HTML; charset=utf-8'])
      expect(isHtmlMimeType(t)).toBe(true);
    for (const t of ['application/javascript', 'image/svg+xml', 'text/htmlx', undefined, 3])
      expect(isHtmlMimeType(t)).toBe(false);
  });

  it('replaces each in its place by a marker, counts them, and leaves other schemes alone', () => {
    const result = {
      contents: [
        { uri: 'ui://a/app.html', mimeType: 'text/html;profile=mcp-app', text: '<p>ok</p>' },
        { uri: 'ui://a/app.js', mimeType: 'application/javascript', text: 'alert(1)' },
        { uri: 'UI://a/img', blob: 'AAAA' },
        { uri: 'test://plain', mimeType: 'application/javascript', text: 'fine here' },
      ],
      _meta: { 'io.mcpx/omitted': { notHtml: 99 }, other: 1 },
    };
    const out = screenAppContents(result) as {
      contents: Array<Record<string, unknown>>;
      _meta: Record<string, unknown>;
    };
    expect(out.contents[0]).toBe(result.contents[0]);
    expect(out.contents[1]).toMatchObject({
      uri: 'ui://a/app.js',
      mimeType: 'text/plain',
      _meta: {
        'io.mcpx/omitted': { type: 'resource', mimeType: 'application/javascript', bytes: 8, reason: 'not_html' },
      },
    });
    expect(String(out.contents[1]!.text)).not.toContain('alert');
    expect(out.contents[2]).toMatchObject({
      uri: 'UI://a/img',
      _meta: { 'io.mcpx/omitted': { bytes: 3, reason: 'not_html' } },
    });
    expect(out.contents[3]).toBe(result.contents[3]);
    expect(out._meta).toEqual({ 'io.mcpx/omitted': { notHtml: 2 }, other: 1 });
    const clean = { contents: [result.contents[0]] };
    expect(screenAppContents(clean)).toBe(clean);
  });
});
