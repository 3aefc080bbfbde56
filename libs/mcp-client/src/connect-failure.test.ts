import { describe, expect, it } from 'vitest';
import { explainConnectFailure, socketErrorCode } from './connect-failure.js';
import { McpClientError, McpClientErrorCode } from './errors.js';

/** A socket error as undici wraps it: `fetch failed` caused by an error with a `code`. */
function fetchFailed(code: string): TypeError {
  const socket = Object.assign(new Error(`socket: ${code}`), { code });
  return new TypeError('fetch failed', { cause: socket });
}

const connect = (details: ConstructorParameters<typeof McpClientError>[2], cause?: unknown) =>
  new McpClientError(
    McpClientErrorCode.ConnectFailed,
    'MCP connect failed',
    details,
    cause === undefined ? undefined : { cause },
  );

/**
 * The words of a failed connect, decided by code, status, challenge and socket code (the real
 * failures, from real servers, are in test/console/connect-errors.test.ts; these are the cases a
 * loopback cannot make: certificates, DNS, a 5xx).
 */
describe('explainConnectFailure', () => {
  it('finds the socket code under fetch failed and an AggregateError', () => {
    expect(socketErrorCode(fetchFailed('ECONNREFUSED'))).toBe('ECONNREFUSED');
    expect(
      socketErrorCode(
        new TypeError('fetch failed', {
          cause: new AggregateError([Object.assign(new Error(''), { code: 'ENETUNREACH' })]),
        }),
      ),
    ).toBe('ENETUNREACH');
    expect(socketErrorCode(new Error('plain'))).toBeUndefined();
  });

  it('says what happened and what to try for each kind of failure', () => {
    const url = 'https://mcp.example.com/api/mcp';
    expect(explainConnectFailure(connect({ socketCode: 'ENOTFOUND' }), url)).toBe(
      "the host mcp.example.com is not found: check the URL's host name",
    );
    expect(explainConnectFailure(connect({ socketCode: 'DEPTH_ZERO_SELF_SIGNED_CERT' }), url)).toContain(
      'the certificate of mcp.example.com is not trusted',
    );
    expect(explainConnectFailure(connect({}, fetchFailed('ECONNRESET')), url)).toContain(
      'closed the connection before answering',
    );
    expect(explainConnectFailure(connect({ status: 502 }), url)).toBe(
      'the server failed (HTTP 502): try again later, or tell its operator',
    );
    expect(explainConnectFailure(connect({ status: 405 }), url)).toContain('it does not look like an MCP endpoint');
    expect(explainConnectFailure(connect({ status: 404 }), 'https://mcp.example.com/mcp')).toBe(
      "the server answered 404 at /mcp: check the path in the server's documentation",
    );
    expect(explainConnectFailure(new McpClientError(McpClientErrorCode.Timeout, 'x'), url)).toContain(
      'did not answer in time',
    );
  });

  it('tells an OAuth challenge from a refused credential, by the configured auth', () => {
    const oauth = new McpClientError(McpClientErrorCode.Unauthorized, 'x', {
      status: 401,
      wwwAuthenticate: 'Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"',
    });
    expect(explainConnectFailure(oauth, 'https://mcp.example.com/mcp', 'none')).toBe(
      'this server signs in with OAuth: set it with --auth oauth (in the console: Authorize)',
    );
    expect(explainConnectFailure(oauth, 'https://mcp.example.com/mcp', 'oauth')).toContain('not authorized yet');
    const plain = new McpClientError(McpClientErrorCode.Unauthorized, 'x', { status: 401 });
    expect(explainConnectFailure(plain, 'https://mcp.example.com/mcp', 'bearer')).toBe(
      'the server refused the credentials it was given (HTTP 401): check the token or headers',
    );
    expect(explainConnectFailure(plain, 'https://mcp.example.com/mcp', 'none')).toContain('--auth bearer --token T');
  });

  it('says nothing where it knows nothing better (the raw message is shown)', () => {
    expect(explainConnectFailure(new Error('odd'), 'https://mcp.example.com/mcp')).toBeUndefined();
    expect(explainConnectFailure(connect({}), 'https://mcp.example.com/mcp')).toBeUndefined();
    expect(
      explainConnectFailure(new McpClientError(McpClientErrorCode.Cancelled, 'x'), 'https://mcp.example.com/mcp'),
    ).toBeUndefined();
  });
});
