import { describe, expect, it } from 'vitest';
import { tokenName } from './sign-in-secrets.js';

/** The agent-token name alphabet (what RevokeAgentToken's list shows and the CLI prints). */
const NAME_RE = /^[\p{L}\p{N} ._:@()/+-]{1,64}$/u;

describe("a signed-in client's name in the owner's token list", () => {
  it('names the client and the host of its metadata document', () => {
    expect(tokenName('Claude', 'https://claude.example/oauth/client.json')).toBe('OAuth: Claude (claude.example)');
  });

  it('keeps the host whole and within the alphabet and 64 characters, whatever the client calls itself', () => {
    for (const name of ['x'.repeat(200), '<script>alert(1)</script>', 'a\u202eb\u0000c', 'Ünïcødé 客户端', '   ']) {
      const out = tokenName(name, 'https://tools.client.example:8443/c.json');
      expect(out, name).toMatch(NAME_RE);
      expect(out.endsWith('(tools.client.example:8443)')).toBe(true);
    }
  });
});
