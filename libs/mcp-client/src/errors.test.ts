import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { HttpStatusError, McpClientError, fetchRejectionText, networkCause, redactUrl } from './errors.js';
import { callRan, classifyMcpError } from './classify.js';

function httpError(status: number, text: string): SdkHttpError {
  return new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint: ${text}`, {
    status,
    text,
  });
}

function fetchFailed(message: string, code: string): TypeError {
  const cause = Object.assign(new Error(message), { code });
  return new TypeError('fetch failed', { cause });
}

describe('classifyMcpError', () => {
  it('tells a cancel from a timeout by the signal', () => {
    const timeout = new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out');
    expect(classifyMcpError(timeout).code).toBe('timeout');
    expect(classifyMcpError(timeout, AbortSignal.abort()).code).toBe('cancelled');
  });

  it('keeps the JSON-RPC code of a protocol error', () => {
    const error = classifyMcpError(new ProtocolError(ProtocolErrorCode.InvalidParams, 'bad cursor'));
    expect(error).toMatchObject({ code: 'protocol_error', mcpCode: -32602, retryable: false });
    expect(error.message).toContain('bad cursor');
  });

  it('takes the stand-in answer of a stream cut at a bound for the cut, naming the bound; not a look-alike', () => {
    const message =
      'response from http://127.0.0.1:1 too large: more than 8 MiB (bound maxSseEventBytes = 8388608 bytes)';
    const standIn = (data: unknown): ProtocolError => new ProtocolError(-32000, message, data);
    const bound = { name: 'maxSseEventBytes', limit: 8388608 };
    const cut = classifyMcpError(standIn({ code: 'response_too_large', bound }), undefined, { transport: 'http' });
    expect(cut).toMatchObject({ code: 'transport_error', ran: 'maybe', details: { bound, transport: 'http' } });
    expect(cut.message).toContain('(bound maxSseEventBytes = 8388608 bytes)');
    // Another -32000, another data code, a bound not of a bound's form or naming a secret: the server's error.
    const secret = 'sk-live-0123456789';
    for (const data of [
      undefined,
      { code: 'other', bound },
      { code: 'response_too_large', bound: { name: 'max bytes <script>', limit: 1 } },
      { code: 'response_too_large', bound: { name: secret.replace(/[^a-z]/g, ''), limit: 1 } },
      { code: 'response_too_large', bound: { name: 'maxBodyBytes', limit: -1 } },
    ]) {
      const error = classifyMcpError(standIn(data), undefined, { secrets: [secret.replace(/[^a-z]/g, '')] });
      expect(error).toMatchObject({ code: 'protocol_error', mcpCode: -32000 });
      expect(error.details.bound).toBeUndefined();
    }
  });

  it('maps a closed connection to transport_error', () => {
    expect(classifyMcpError(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed')).code).toBe(
      'transport_error',
    );
  });

  it('maps a 404 on a session to a retryable session_expired', () => {
    const error = classifyMcpError(httpError(404, '{}'));
    expect(error).toMatchObject({ code: 'session_expired', retryable: true, status: 404 });
  });

  it('maps a 400 "No valid session ID" of an SDK v1 server to session_expired too', () => {
    const body =
      '{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}';
    expect(classifyMcpError(httpError(400, body))).toMatchObject({
      code: 'session_expired',
      retryable: true,
      status: 400,
    });
    expect(classifyMcpError(httpError(400, '{"error":"bad arguments"}')).code).toBe('transport_error');
    // The code decides, not the words: a malformed-request refusal that mentions a session is not a lost one.
    const invalid = '{"jsonrpc":"2.0","error":{"code":-32600,"message":"Bad Request: no valid session id"},"id":null}';
    expect(classifyMcpError(httpError(400, invalid)).code).toBe('transport_error');
  });

  it('does not take a 404 on a modern connection for a lost session', () => {
    expect(classifyMcpError(httpError(404, '{}'), undefined, { era: 'modern' })).toMatchObject({
      code: 'transport_error',
      retryable: false,
    });
  });

  it('maps an unsupported protocol version and a failed era negotiation to era_negotiation_failed', () => {
    expect(classifyMcpError(new ProtocolError(-32022, 'Unsupported protocol version')).code).toBe(
      'era_negotiation_failed',
    );
    expect(classifyMcpError(new SdkError(SdkErrorCode.EraNegotiationFailed, 'no overlap')).code).toBe(
      'era_negotiation_failed',
    );
  });

  it('maps a 401 to unauthorized with the challenge', () => {
    const error = classifyMcpError(httpError(401, 'nope'), undefined, { wwwAuthenticate: 'Bearer' });
    expect(error).toMatchObject({ code: 'unauthorized', status: 401, wwwAuthenticate: 'Bearer' });
  });

  it('keeps the socket error of a fetch failure', () => {
    const error = classifyMcpError(fetchFailed('connect ECONNREFUSED 127.0.0.1:45678', 'ECONNREFUSED'));
    expect(error.code).toBe('transport_error');
    expect(error.message).toContain('connect ECONNREFUSED 127.0.0.1:45678');
  });

  it('scrubs secrets out of server-provided text', () => {
    const error = classifyMcpError(httpError(500, 'bad token abcd-secret'), undefined, {
      secrets: ['abcd-secret'],
    });
    expect(error.message).not.toContain('abcd-secret');
    expect(error.message).toContain('[redacted]');
  });

  it('scrubs every form of a header secret, from the message and from the causes a log line writes', () => {
    const raw = httpError(
      500,
      `echo ${Buffer.from('abcd-secret-1').toString('base64')} ABCD-SECRET-1 abcd%2Dsecret%2D1`,
    );
    const error = classifyMcpError(raw, undefined, { secrets: ['Bearer abcd-secret-1'] });
    expect(error.message).toBe('MCP server answered HTTP 500: echo [redacted] [redacted] [redacted]');
    expect(raw.message).not.toMatch(/secret/i);
    expect(JSON.stringify(raw.data)).not.toMatch(/secret/i);
  });

  it('returns an McpClientError unchanged', () => {
    const error = new McpClientError('timeout', 'x');
    expect(classifyMcpError(error)).toBe(error);
  });
});

describe('what a failed call ran', () => {
  it('is none only where the failure proves the server never ran it', () => {
    expect(callRan(fetchFailed('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'), false)).toBe('none');
    expect(
      callRan(
        new TypeError('fetch failed', {
          cause: new AggregateError([Object.assign(new Error(''), { code: 'EHOSTUNREACH' })]),
        }),
        false,
      ),
    ).toBe('none');
    expect(callRan(new HttpStatusError(429, 'slow down'), true)).toBe('none');
    expect(callRan(new HttpStatusError(401, 'no'), true)).toBe('none');
    expect(callRan(new ProtocolError(-32022, 'Unsupported protocol version'), true)).toBe('none');
    expect(callRan(new SdkError(SdkErrorCode.NotConnected, 'Not connected'), false)).toBe('none');
  });

  it('is maybe for anything after the request may have been written', () => {
    expect(callRan(fetchFailed('other side closed', 'UND_ERR_SOCKET'), false)).toBe('maybe');
    expect(callRan(fetchFailed('read ECONNRESET', 'ECONNRESET'), false)).toBe('maybe');
    expect(callRan(new HttpStatusError(502, 'bad gateway'), true)).toBe('maybe');
    expect(callRan(new HttpStatusError(499, 'closed'), true)).toBe('maybe');
    expect(callRan(new ProtocolError(-32603, 'internal'), true)).toBe('maybe');
    expect(callRan(new SdkError(SdkErrorCode.ConnectionClosed, 'Connection closed'), false)).toBe('maybe');
    // The library's own error about an answer that had begun (a body too large): the request ran or may have.
    expect(callRan(new McpClientError('transport_error', 'too large'), true)).toBe('maybe');
  });

  it('does not read messages: a refused-looking message on a reset socket is still maybe', () => {
    expect(callRan(fetchFailed('connect ECONNREFUSED 127.0.0.1:1', 'ECONNRESET'), false)).toBe('maybe');
    expect(callRan(new Error('MCP connection is closed (may have executed: no)'), false)).toBe('maybe');
  });

  it('is carried by the error, with a default by code where no one says', () => {
    expect(new McpClientError('connect_failed', 'x').ran).toBe('none');
    expect(new McpClientError('timeout', 'x').ran).toBe('maybe');
    expect(new McpClientError('maybe_executed', 'x').ran).toBe('maybe');
    const said = classifyMcpError(fetchFailed('other side closed', 'UND_ERR_SOCKET'), undefined, { ran: 'maybe' });
    expect(said).toMatchObject({ code: 'transport_error', ran: 'maybe' });
    expect(said.withRan('maybe')).toBe(said);
    expect(said.withRan('none')).toMatchObject({ code: 'transport_error', ran: 'none', message: said.message });
  });
});

describe('redactUrl', () => {
  it('drops userinfo, query and fragment', () => {
    expect(redactUrl('https://user:pw@example.com:8443/mcp?key=secret#x')).toBe('https://example.com:8443/mcp');
    expect(redactUrl('not a url')).toBe('<invalid url>');
  });
});

describe('networkCause: a network failure is told by its code and its origin, never its words', () => {
  it('an error without a cause is one only when it carries a network code', () => {
    expect(networkCause(new TypeError('fetch failed'))).toBeUndefined();
    expect(networkCause(new TypeError('network terminated'))).toBeUndefined();
    const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(networkCause(socket)).toBe('connect ECONNREFUSED 127.0.0.1:1');
    const undici = Object.assign(new TypeError('other side closed'), { code: 'UND_ERR_SOCKET' });
    expect(networkCause(undici)).toBe('other side closed');
  });

  it("what the fetch itself rejected with is a network failure when it is a TypeError, the Fetch standard's network error", () => {
    expect(fetchRejectionText(new TypeError('Load failed'))).toBe('Load failed');
    expect(fetchRejectionText(fetchFailed('getaddrinfo ENOTFOUND x.invalid', 'ENOTFOUND'))).toBe(
      'getaddrinfo ENOTFOUND x.invalid',
    );
    expect(fetchRejectionText(new DOMException('This operation was aborted', 'AbortError'))).toBeUndefined();
    expect(fetchRejectionText(undefined)).toBeUndefined();
  });
});
