import { ProtocolError } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { discoverFault, isEraVerdict, shouldReprobe, type FailedOnVerdict } from './era-verdict.js';
import { HttpStatusError, McpClientError, RefusedRpcError } from './errors.js';
import { callRan, classifyMcpError, isStaleModernPrior } from './classify.js';

const failed = (extra: Partial<FailedOnVerdict> = {}): FailedOnVerdict => ({
  fromPrior: true,
  reprobed: false,
  cancelled: false,
  era: 'modern',
  stale: true,
  ...extra,
});

describe('shouldReprobe: a cached verdict that stopped working is probed again, once', () => {
  it('re-probes a modern verdict from the cache when the server refused it', () => {
    expect(shouldReprobe(failed())).toBe(true);
  });

  it('never twice, never for a verdict the connection probed itself, never for a cancelled request', () => {
    expect(shouldReprobe(failed({ reprobed: true }))).toBe(false);
    expect(shouldReprobe(failed({ fromPrior: false }))).toBe(false);
    expect(shouldReprobe(failed({ cancelled: true }))).toBe(false);
  });

  it('not for a legacy verdict (a lost session is the pool’s fresh handshake), nor for a failure that does not say the verdict is stale', () => {
    expect(shouldReprobe(failed({ era: 'legacy' }))).toBe(false);
    expect(shouldReprobe(failed({ stale: false }))).toBe(false);
  });
});

describe('isStaleModernPrior: the answers that say a modern verdict no longer holds', () => {
  it('takes a 400 or a 404 to a modern request for a stale verdict (a server that went back to 2025, or lost its endpoint)', () => {
    expect(isStaleModernPrior(new HttpStatusError(400, 'Bad Request'))).toBe(true);
    expect(isStaleModernPrior(new HttpStatusError(404, 'Not Found'))).toBe(true);
  });

  it('takes UnsupportedProtocolVersion (-32022) for stale', () => {
    expect(isStaleModernPrior(new ProtocolError(-32022, 'Unsupported protocol version: 2026-07-28'))).toBe(true);
  });

  it('looks through the MCP client error to its cause', () => {
    expect(
      isStaleModernPrior(
        new McpClientError('transport_error', 'x', {}, { cause: new HttpStatusError(404, 'Not Found') }),
      ),
    ).toBe(true);
  });

  it('takes a -32000 that came in an HTTP 400 for stale (a legacy transport refusing a request without a session), and no other server answer', () => {
    expect(isStaleModernPrior(new RefusedRpcError(400, -32000, 'Bad Request: Server not initialized'))).toBe(true);
    expect(isStaleModernPrior(new RefusedRpcError(400, -32000, 'anything at all'))).toBe(true);
    // A handler's -32000 (HTTP 200) is the server's answer, whatever its words.
    expect(isStaleModernPrior(new ProtocolError(-32000, 'Bad Request: Server not initialized'))).toBe(false);
    expect(isStaleModernPrior(new ProtocolError(-32000, 'tool exploded'))).toBe(false);
    expect(isStaleModernPrior(new RefusedRpcError(400, -32602, 'Invalid params'))).toBe(false);
    expect(isStaleModernPrior(new ProtocolError(-32602, 'Invalid params'))).toBe(false);
  });

  it('looks through the classified error to the refusal, whose status it keeps', () => {
    const direct = classifyMcpError(new RefusedRpcError(400, -32000, 'x'), undefined, { era: 'modern' });
    expect(direct).toMatchObject({ code: 'protocol_error', mcpCode: -32000, status: 400 });
    expect(isStaleModernPrior(direct)).toBe(true);
    const thrown = classifyMcpError(new ProtocolError(-32000, 'Bad Request: No valid session ID provided'), undefined, {
      era: 'modern',
    });
    expect(thrown.status).toBeUndefined();
    expect(isStaleModernPrior(thrown)).toBe(false);
  });

  it('a JSON-RPC error refused in an HTTP 400 ran nothing; one answered by a handler may have', () => {
    expect(callRan(new RefusedRpcError(400, -32000, 'Bad Request: Server not initialized'), true)).toBe('none');
    expect(callRan(new ProtocolError(-32000, 'Bad Request: Server not initialized'), true)).toBe('maybe');
  });

  it('does not take what may have run for stale (a 500, a timeout, a broken stream)', () => {
    expect(isStaleModernPrior(new HttpStatusError(500, 'Internal Server Error'))).toBe(false);
    expect(isStaleModernPrior(new HttpStatusError(401, 'Unauthorized'))).toBe(false);
    expect(isStaleModernPrior(new McpClientError('timeout', 'MCP request timed out'))).toBe(false);
    expect(isStaleModernPrior(new McpClientError('maybe_executed', 'stream broke'))).toBe(false);
    expect(isStaleModernPrior(new TypeError('fetch failed'))).toBe(false);
  });
});

describe('discoverFault: a server/discover answer trusted as a modern verdict', () => {
  const good = { supportedVersions: ['2025-11-25', '2026-07-28'], capabilities: {} };

  it('trusts a short list of versions naming a modern revision, and a negotiated version among them', () => {
    expect(discoverFault(good)).toBeUndefined();
    expect(discoverFault(good, '2026-07-28')).toBeUndefined();
  });

  it('says why it refuses garbage, an old-only list, or a server that negotiates what it did not advertise', () => {
    expect(discoverFault('nope')).toBe('the server/discover result is not an object');
    expect(discoverFault({ supportedVersions: [] })).toBe('supportedVersions is missing or empty');
    expect(discoverFault({ supportedVersions: ['2025-11-25'] })).toContain('names no modern revision');
    expect(discoverFault({ supportedVersions: ['latest'] })).toContain('not a YYYY-MM-DD version');
    expect(discoverFault({ supportedVersions: Array.from({ length: 33 }, () => '2026-07-28') })).toContain(
      'more than 32',
    );
    expect(discoverFault({ ...good, capabilities: [] })).toBe('capabilities is not an object');
    expect(discoverFault(good, '2027-01-01')).toContain('is not among the advertised');
    expect(discoverFault(good, '2025-11-25')).toContain('a legacy one on a modern connection');
  });
});

describe('isEraVerdict', () => {
  it('accepts the two stored shapes and nothing else', () => {
    expect(isEraVerdict({ era: 'legacy', protocolVersion: '2025-11-25', transport: 'sse' })).toBe(true);
    expect(
      isEraVerdict({ era: 'modern', protocolVersion: '2026-07-28', discover: { supportedVersions: ['2026-07-28'] } }),
    ).toBe(true);
    expect(isEraVerdict({ era: 'legacy', protocolVersion: '2025-11-25', transport: 'ws' })).toBe(false);
    expect(isEraVerdict({ era: 'modern', protocolVersion: '2026-07-28' })).toBe(false);
    expect(isEraVerdict({ era: 'future', protocolVersion: 'x' })).toBe(false);
    expect(isEraVerdict(null)).toBe(false);
  });
});
