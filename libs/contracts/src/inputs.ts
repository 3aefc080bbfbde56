/**
 * Input requests (2026-07-28 `input_required`, and a legacy server's pushed `elicitation/create`):
 * the shapes the proxy records, the registry lists and answers, the console renders, and the
 * restricted elicitation schema every answer is checked against (its checks: `./input-checks.ts`).
 * Pure and bounded.
 */
import type { WaitingCallNotice } from './payloads.js';

/** Who answers one embedded request: a person (the account's owner) or the agent's runtime. */
export type InputAnswerer = 'person' | 'runtime';

/** One embedded request of an `input_required` round, as shown (never the server's `requestState`). */
export type InputRequestItem =
  | { key: string; kind: 'form'; answerBy: InputAnswerer; message: string; requestedSchema: RestrictedSchema }
  | { key: string; kind: 'url'; answerBy: 'person'; message: string; url: string; elicitationId?: string }
  | { key: string; kind: 'sampling'; answerBy: 'runtime'; params: Record<string, unknown> }
  /** `roots/list`: asked of a runtime that declares it shares roots (the endpoint's client that declared `roots`). */
  | { key: string; kind: 'roots'; answerBy: 'runtime' };

/** An answer to one form or URL elicitation (the 2026-07-28 `ElicitResult`). */
export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, ElicitValue>;
}
export type ElicitValue = string | number | boolean | string[];

/** The restricted elicitation schema: a flat object of primitive properties. */
export interface RestrictedSchema {
  type: 'object';
  properties: Record<string, RestrictedProperty>;
  required?: string[];
  [k: string]: unknown;
}
export type RestrictedProperty = Record<string, unknown> & {
  type: 'string' | 'number' | 'integer' | 'boolean' | 'array';
};

export const InputStatuses = { pending: 'pending', answered: 'answered', used: 'used' } as const;
export type InputStatus = (typeof InputStatuses)[keyof typeof InputStatuses];

/** Payload of `mcp.inputs.requested.<acct>`: a call stopped for input. */
export interface InputRequestedEvent extends WaitingCallNotice {
  inputRequestId: string;
  /** Whether a person must answer something (false: the runtime answers it all). */
  forPerson: boolean;
}

/** Payload of `mcp.inputs.answered.<acct>`: a person answered every question of an input request. */
export interface InputAnsweredEvent extends WaitingCallNotice {
  inputRequestId: string;
  answeredBy: string;
  /** ISO-8601. */
  answeredAt: string;
}

/** Input request ids: `inp_` and 128 random bits, base64url (a subject token and request field). */
export const INPUT_REQUEST_ID_RE = /^inp_[A-Za-z0-9_-]{1,64}$/;
/** Bounds of what a server may ask and what an answer may hold. */
export const INPUT_LIMITS = {
  /** Embedded requests per round. */
  requestsPerRound: 8,
  /** Rounds of one call (each answered request that the server answers with another input_required is one). */
  rounds: 8,
  /** Properties of one form. */
  properties: 32,
  messageChars: 2_000,
  titleChars: 200,
  descriptionChars: 1_000,
  /** Enum values of one property. */
  enumValues: 100,
  /** Characters of one string value of an answer. */
  valueChars: 4_000,
  urlChars: 2_048,
  /** JSON bytes of a whole answer, and of one request's `params` (sampling). */
  answerBytes: 64 * 1024,
  samplingParamsBytes: 64 * 1024,
  /**
   * Bytes of the server's opaque `requestState` the connector keeps (sealed, in Redis) for one
   * round: a bigger one is refused, so a server cannot make every call store megabytes.
   */
  requestStateBytes: 256 * 1024,
} as const;
