import { describe, expect, it } from 'vitest';
import { bearerChallenge, protectedResourceMetadata } from './oauth-resource.js';

const PATH = '/v1/agents/0b9f0d52-6d2e-4a43-9a3c-0f7b6d5e2a11/mcp';

describe("the endpoint's OAuth answers", () => {
  it('describes an agent endpoint by its public URL (else the request origin) and names the registry', () => {
    const request = new URL(`http://127.0.0.1:8083${PATH}/`);
    expect(
      protectedResourceMetadata(
        { authorizationServer: 'https://mcpx.example.com', publicUrl: 'https://mcp.example.com' },
        request,
        `${PATH}/`,
      ),
    ).toEqual({
      resource: `https://mcp.example.com${PATH}`,
      authorization_servers: ['https://mcpx.example.com'],
      bearer_methods_supported: ['header'],
      resource_name: 'mcpx agent endpoint',
    });
    expect(protectedResourceMetadata({ authorizationServer: 'http://127.0.0.1:8080' }, request, PATH).resource).toBe(
      `http://127.0.0.1:8083${PATH}`,
    );
  });

  it('points the 401 to the metadata only when OAuth is on', () => {
    const request = new URL(`http://127.0.0.1:8083${PATH}`);
    expect(bearerChallenge(undefined, request, PATH, false)).toBe('Bearer realm="mcpx"');
    expect(bearerChallenge(undefined, request, PATH, true)).toBe('Bearer realm="mcpx", error="invalid_token"');
    expect(bearerChallenge({ authorizationServer: 'https://a.example' }, request, PATH, true)).toBe(
      `Bearer realm="mcpx", resource_metadata="http://127.0.0.1:8083/.well-known/oauth-protected-resource${PATH}", error="invalid_token"`,
    );
  });
});
