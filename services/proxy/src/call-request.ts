import { ErrorCodes, WireError, decodePayload, invalidInput, type ProxyCallRequest } from '@mcpx/contracts';

/** Seed 000: a call may take at most 120 s. */
export const MAX_CALL_TIMEOUT_MS = 120_000;
/**
 * A call request bigger than this is refused before it is decoded (NATS' default max payload is
 * 1 MiB; a server configured larger must not let one request pin the proxy's memory).
 */
export const MAX_REQUEST_BYTES = 1024 * 1024;
/** Nesting depth of a request that is refused before decoding (cbor-x recurses). */
const MAX_NESTING = 64;

const ID_RE = /^[A-Za-z0-9_-]{1,128}$/;

function requireId(v: unknown, field: string): string {
  if (typeof v !== 'string' || !ID_RE.test(v)) throw invalidInput(field, 'must be 1-128 letters, digits, _ or -');
  return v;
}

/**
 * Decodes a call request's bytes: refuses what is too big, nested too deep to decode safely, or
 * not CBOR with a typed `invalid_input`, never a crash.
 */
export function decodeCallRequest(data: Uint8Array): ProxyCallRequest {
  if (data.byteLength === 0) throw invalidInput('request', 'empty payload');
  if (data.byteLength > MAX_REQUEST_BYTES) throw invalidInput('request', `larger than ${MAX_REQUEST_BYTES} bytes`);
  if (cborNestingExceeds(data, MAX_NESTING)) throw invalidInput('request', `nested deeper than ${MAX_NESTING} levels`);
  let raw: unknown;
  try {
    raw = decodePayload(data);
  } catch {
    throw new WireError(ErrorCodes.invalidInput, 'request: not a CBOR message', { field: 'request' });
  }
  return parseCallRequest(raw);
}

/** Checks the shape of a decoded call request, naming the first bad field. */
export function parseCallRequest(raw: unknown): ProxyCallRequest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw invalidInput('request', 'must be a map');
  const r = raw as Record<string, unknown>;
  const args = r.arguments ?? {};
  if (args === null || typeof args !== 'object' || Array.isArray(args) || args instanceof Uint8Array) {
    throw invalidInput('arguments', 'must be an object');
  }
  if (r.timeoutMs !== undefined && (typeof r.timeoutMs !== 'number' || !Number.isFinite(r.timeoutMs) || r.timeoutMs <= 0)) {
    throw invalidInput('timeoutMs', 'must be a positive number of milliseconds');
  }
  if (typeof r.tool !== 'string' || r.tool === '' || r.tool.length > 128) throw invalidInput('tool', 'must name a tool');
  const req: ProxyCallRequest = {
    account: requireId(r.account, 'account'),
    agent: requireId(r.agent, 'agent'),
    run: requireId(r.run, 'run'),
    callId: requireId(r.callId, 'callId'),
    tool: r.tool,
    arguments: args as Record<string, unknown>,
  };
  if (typeof r.timeoutMs === 'number') req.timeoutMs = Math.min(r.timeoutMs, MAX_CALL_TIMEOUT_MS);
  if (r.approvalId !== undefined && r.approvalId !== null) req.approvalId = requireId(r.approvalId, 'approvalId');
  return req;
}

/**
 * True when CBOR `data` nests arrays/maps deeper than `max` (a cheap scan of the heads; malformed
 * input answers false and is left to the decoder). Guards the recursive decoder's stack.
 */
export function cborNestingExceeds(data: Uint8Array, max: number): boolean {
  // Items still expected at each open level; -1 for indefinite length.
  const stack: number[] = [];
  let i = 0;
  let items = 1;
  const n = data.byteLength;
  while (i < n) {
    if (items === 0) {
      const parent = stack.pop();
      if (parent === undefined) return false;
      items = parent;
      continue;
    }
    const b = data[i++]!;
    const major = b >> 5;
    const info = b & 31;
    if (b === 0xff) {
      // Break of an indefinite container.
      const parent = stack.pop();
      if (parent === undefined) return false;
      items = parent;
      if (items > 0) items--;
      continue;
    }
    let len = info;
    if (info === 24) len = data[i++]!;
    else if (info === 25) {
      len = (data[i]! << 8) | data[i + 1]!;
      i += 2;
    } else if (info === 26) {
      len = ((data[i]! << 24) >>> 0) + (data[i + 1]! << 16) + (data[i + 2]! << 8) + data[i + 3]!;
      i += 4;
    } else if (info === 27) {
      // 64-bit lengths: never a real container here; skip the length bytes.
      len = Number.MAX_SAFE_INTEGER;
      i += 8;
    }
    const indefinite = info === 31;
    if (items > 0) items--;
    switch (major) {
      case 2:
      case 3:
        if (!indefinite) i += len;
        else {
          stack.push(items);
          items = -1;
        }
        break;
      case 4:
      case 5: {
        const count = indefinite ? -1 : major === 5 ? len * 2 : len;
        if (count === 0) break;
        stack.push(items);
        if (stack.length > max) return true;
        items = count;
        break;
      }
      case 6:
        // A tag wraps the next item.
        items++;
        break;
      default:
        break;
    }
  }
  return false;
}
