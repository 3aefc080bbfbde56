import { describe, expect, it } from 'vitest';
import { ERROR_TRAITS, ErrorCodes } from '@mcpx/contracts';
import { McpClientError, McpClientErrorCode, McpClientRan } from '@mcpx/mcp-client';
import { sentCall, toWire } from './wire-errors.js';

/**
 * The wire code of an MCP client error follows from its code and the client's word on what ran
 * (`McpClientError.ran`), checked against `ERROR_TRAITS`: the message is never read. The suites
 * that prove it end to end against real servers are `libs/mcp-client/src/test/ran.test.ts` and
 * `test/proxy/may-have-run.test.ts`.
 */
describe('toWire', () => {
  it('says maybe_executed for every code whose wire traits say nothing ran when the client says it may have', () => {
    for (const code of Object.values(McpClientErrorCode)) {
      const wire = toWire(new McpClientError(code, 'x', { ran: McpClientRan.Maybe }));
      expect(ERROR_TRAITS[wire.code].ran, code).not.toBe('none');
      expect(wire.retryable, code).toBe(false);
    }
  });

  it('keeps a retryable transport_error only when the client says nothing ran', () => {
    expect(toWire(new McpClientError('transport_error', 'x', { ran: McpClientRan.None })).code).toBe(
      ErrorCodes.transportError,
    );
    expect(toWire(new McpClientError('transport_error', 'x', { ran: McpClientRan.Maybe })).code).toBe(
      ErrorCodes.maybeExecuted,
    );
  });

  it('does not read the message: words that once decided no longer do', () => {
    expect(
      toWire(new McpClientError('transport_error', 'the server may have executed it', { ran: McpClientRan.None })).code,
    ).toBe(ErrorCodes.transportError);
    expect(
      toWire(new McpClientError('transport_error', 'MCP connection is closed', { ran: McpClientRan.Maybe })).code,
    ).toBe(ErrorCodes.maybeExecuted);
  });

  it('maps each code as before where what ran agrees', () => {
    expect(toWire(new McpClientError('unauthorized', 'x')).code).toBe(ErrorCodes.authRequired);
    expect(toWire(new McpClientError('timeout', 'x')).code).toBe(ErrorCodes.timeout);
    expect(toWire(new McpClientError('cancelled', 'x')).message).toBe('the call was cancelled');
    expect(
      toWire(new McpClientError('protocol_error', 'x', { mcpCode: -32603, ran: McpClientRan.Maybe })).toJSON(),
    ).toMatchObject({ code: 'server_error', details: { mcpCode: -32603 } });
    expect(toWire(new McpClientError('session_expired', 'x')).code).toBe(ErrorCodes.transportError);
  });

  it('takes anything else thrown after the call was handed over as may have run; before it, internal', async () => {
    const after = await sentCall(Promise.reject(new RangeError('a bug'))).catch((e: unknown) => e);
    expect(toWire(after).code).toBe(ErrorCodes.maybeExecuted);
    expect(toWire(new RangeError('a bug')).code).toBe(ErrorCodes.internal);
  });
});
