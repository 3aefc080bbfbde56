import { integerSetting } from './settings.js';

const MiB = 1024 * 1024;

/**
 * The bounds a public HTTP face holds every client to before it knows who they are
 * (`@mcpx/inbound` enforces them): how long headers and a body may take to arrive, how long an
 * idle keep-alive socket stays, how many bytes of request bodies the process buffers at once, and
 * how many sockets one peer address may hold open.
 */
export interface InboundLimits {
  /** `<FACE>_HEADERS_TIMEOUT_MS`: a request's headers must arrive within this (default 10 s). */
  headersTimeoutMs: number;
  /** `<FACE>_BODY_TIMEOUT_MS`: a request's body must arrive within this of its headers, or 408 and closed (default 10 s). */
  bodyTimeoutMs: number;
  /** `<FACE>_KEEPALIVE_TIMEOUT_MS`: an idle keep-alive socket is closed after this (the face's default). */
  keepAliveTimeoutMs: number;
  /** `<FACE>_BODY_BUDGET_BYTES`: bytes of request bodies buffered at once by the process; past it 503 (default 64 MiB). */
  bodyBudgetBytes: number;
  /** `<FACE>_CONNECTIONS_PER_ADDRESS`: open sockets one peer address may hold (default 256; 0: no cap). */
  connectionsPerAddress: number;
}

export const DEFAULT_INBOUND_LIMITS: Readonly<InboundLimits> = Object.freeze({
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  keepAliveTimeoutMs: 5_000,
  bodyBudgetBytes: 64 * MiB,
  connectionsPerAddress: 256,
});

/**
 * The inbound limits of one face from `<prefix>_…` variables (`ENDPOINT`, `REGISTRY`), over the
 * defaults (`defaults` changes them for the face, e.g. the endpoint's longer keep-alive). A
 * malformed value stops the start, naming the variable.
 */
export function inboundLimits(
  env: NodeJS.ProcessEnv,
  prefix: string,
  defaults: Partial<InboundLimits> = {},
): InboundLimits {
  const d = { ...DEFAULT_INBOUND_LIMITS, ...defaults };
  const ms = (name: string, fallback: number): number =>
    integerSetting(env, `${prefix}_${name}`, {
      fallback,
      min: 100,
      max: 3_600_000,
      message: `${prefix}_${name} must be a whole number of milliseconds from 100 to 3600000`,
    });
  return {
    headersTimeoutMs: ms('HEADERS_TIMEOUT_MS', d.headersTimeoutMs),
    bodyTimeoutMs: ms('BODY_TIMEOUT_MS', d.bodyTimeoutMs),
    keepAliveTimeoutMs: ms('KEEPALIVE_TIMEOUT_MS', d.keepAliveTimeoutMs),
    bodyBudgetBytes: integerSetting(env, `${prefix}_BODY_BUDGET_BYTES`, {
      fallback: d.bodyBudgetBytes,
      min: 64 * 1024,
      message: `${prefix}_BODY_BUDGET_BYTES must be a whole number of bytes of at least 65536`,
    }),
    connectionsPerAddress: integerSetting(env, `${prefix}_CONNECTIONS_PER_ADDRESS`, {
      fallback: d.connectionsPerAddress,
      min: 0,
      message: `${prefix}_CONNECTIONS_PER_ADDRESS must be a whole number (0: no cap)`,
    }),
  };
}
