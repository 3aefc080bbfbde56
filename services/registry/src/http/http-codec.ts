import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WireError } from '@mcpx/contracts';
import {
  BODY_LIMITS,
  boundInField,
  checkValueBounds,
  decodeStrict,
  encodePayload,
  invalidInput,
} from '@mcpx/contracts';

/** The largest action body read. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** `invalid_input` naming `body`: over {@link MAX_BODY_BYTES} (answered 413). */
export function bodyTooLarge(): WireError {
  return invalidInput('body', `must be at most ${MAX_BODY_BYTES} bytes`, { limit: MAX_BODY_BYTES, status: 413 });
}

/**
 * Decodes an action body, bounded the same way whatever its format: CBOR through the strict
 * decoder (no shared-value or other tags, no indefinite lengths, depth, items), JSON parsed and
 * then held to the same depth and item bounds. Both refusals are `invalid_input` naming `body`, or
 * the action's field a depth or item bound was crossed in (`arguments`).
 */
export function decodeBody(raw: Buffer, cbor: boolean): unknown {
  try {
    return decodeBodyValue(raw, cbor);
  } catch (err) {
    // Too deep or too many items inside an action's field (`action.arguments`) names that field.
    throw boundInField(err, 1);
  }
}

function decodeBodyValue(raw: Buffer, cbor: boolean): unknown {
  if (cbor) return decodeStrict(raw, 'body', BODY_LIMITS);
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch {
    throw invalidInput('body', 'is not JSON');
  }
  checkValueBounds(body, 'body', BODY_LIMITS);
  return body;
}

/** Whether the request speaks CBOR (else JSON). */
export function isCbor(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').startsWith('application/cbor');
}

/** `Retry-After` (whole seconds, at least 1) of an error that says how long to wait. */
export function retryAfterHeader(wire: WireError): Record<string, string> {
  const ms = wire.retryAfterMs;
  return ms === undefined ? {} : { 'retry-after': String(Math.max(1, Math.ceil(ms / 1000))) };
}

/** Answers `body` as CBOR or JSON, with its length. */
export function send(res: ServerResponse, status: number, body: unknown, cbor: boolean): void {
  const bytes = cbor ? Buffer.from(encodePayload(body)) : Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    'content-type': cbor ? 'application/cbor' : 'application/json',
    'content-length': bytes.length,
  });
  res.end(bytes);
}
